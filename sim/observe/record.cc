// The RunRecord's tables (include/fleetsim/record.h): look-ups and CSV headers.
#include "fleetsim/record.h"

namespace fleetsim {

static_assert([] {
  for (int i = 0; i < kOutputFiles; ++i)
    if (static_cast<int>(kOutputs[i].id) != i) return false;
  return true;
}(), "kOutputs must list the outputs in OutputFile order");

std::optional<OutputFile> output_by_cli_name(std::string_view cli_name) {
  for (const OutputSpec& o : kOutputs)
    if (cli_name == o.cli_name) return o.id;
  return std::nullopt;
}

std::string output_cli_names(const char* sep) {
  std::string s;
  for (const OutputSpec& o : kOutputs) s += (s.empty() ? "" : sep) + std::string(o.cli_name);
  return s;
}

std::string csv_header(std::span<const char* const> cols, std::span<const char* const> more,
                       std::span<const char* const> more2) {
  std::string s;
  for (auto part : {cols, more, more2})
    for (const char* c : part) s += (s.empty() ? "" : ",") + std::string(c);
  return s + "\n";
}

}  // namespace fleetsim
