// Finds a folder's flight-recorder dumps by name and by content (record.h:
// find_dump_files): PyTorch names them `<prefix><rank>` with many prefixes, users
// rename them, and jobs collect them in a folder per host. A file is sniffed by its
// first bytes only; reading it whole is the reader's job.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "fleetsim/record.h"
#include "sim/diagnose/pickle_reader.h"
#include "sim/diagnose/record.h"

namespace fleetsim::diagnose {
namespace {

namespace fs = std::filesystem;

constexpr size_t kSniffBytes = 64 * 1024;
constexpr std::string_view kDumpExtensions[] = {".json", ".pkl", ".pickle"};
// Keys only a flight-recorder dump has (PyTorch writes its JSON keys sorted, so the
// version keys come first and pg_config last).
constexpr std::string_view kFrKeys[] = {"\"pg_config\"", "\"pg_status\"", "\"comm_lib_version\"",
                                        "\"nccl_version\"", "\"profiling_name\""};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// The name without a dump extension, and whether it had one.
std::pair<std::string, bool> stem_of(const std::string& name) {
  const std::string low = lower(name);
  for (std::string_view ext : kDumpExtensions)
    if (low.size() > ext.size() && low.compare(low.size() - ext.size(), ext.size(), ext) == 0)
      return {name.substr(0, name.size() - ext.size()), true};
  return {name, false};
}

Diagnostic folder_error(const std::string& file, const std::string& message) {
  Diagnostic d;
  d.loc.file = file;
  d.message = message;
  return d;
}

// The first bytes of a regular file; empty when it cannot be opened (its read names the error).
std::string head_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::string head(kSniffBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return head;
}

bool dump_like_content(const std::string& head) {
  if (looks_like_pickle(head)) return true;
  const size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || head[first] != '{') return false;
  return std::any_of(std::begin(kFrKeys), std::end(kFrKeys),
                     [&](std::string_view key) { return head.find(key) != std::string::npos; });
}

bool record_file(const std::string& name) {
  return std::any_of(std::begin(kOutputs), std::end(kOutputs),
                     [&](const OutputSpec& o) { return name == o.file_name; });
}

// Adds `dir`'s dumps to `out`; with `descend`, also those one subfolder down.
std::optional<Diagnostic> collect(const fs::path& dir, bool descend, std::vector<std::string>& out) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& ent = *it;
    const std::string name = ent.path().filename().string();
    if (name.empty() || name[0] == '.' || record_file(name)) continue;
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".pipe") == 0) continue;
    std::error_code type_ec;
    const fs::file_status st = ent.status(type_ec);
    if (type_ec && dump_like_name(name))
      return folder_error(ent.path().string(), "cannot read flight-recorder dump: " + type_ec.message());
    if (type_ec) continue;
    if (fs::is_directory(st) && descend) {
      if (std::optional<Diagnostic> err = collect(ent.path(), false, out)) return err;
    } else if (fs::is_regular_file(st) && (dump_like_name(name) || dump_like_content(head_of(ent.path())))) {
      out.push_back(ent.path().string());
    }
  }
  if (ec) return folder_error(dir.string(), "cannot list folder: " + ec.message());
  return std::nullopt;
}

}  // namespace

std::optional<int> rank_from_file_name(const std::string& name) {
  const std::string stem = stem_of(name).first;
  size_t i = stem.size();
  while (i > 0 && std::isdigit(static_cast<unsigned char>(stem[i - 1]))) --i;
  if (i == stem.size() || stem.size() - i > 9) return std::nullopt;
  return std::stoi(stem.substr(i));
}

bool dump_like_name(const std::string& name) {
  if (!rank_from_file_name(name)) return false;
  const auto [stem, has_extension] = stem_of(name);
  const std::string low = lower(stem);
  return has_extension || low.find("rank") != std::string::npos || low.find("trace") != std::string::npos ||
         low.find("dump") != std::string::npos;
}

Result<std::vector<std::string>> find_dump_files(const std::string& dir) {
  std::vector<std::string> out;
  if (std::optional<Diagnostic> err = collect(fs::path(dir), true, out)) return *err;
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace fleetsim::diagnose
