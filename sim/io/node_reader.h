// Typed, located access to a YamlNode tree for the scenario loader: each read
// either yields a value or records a Diagnostic naming the key, what was
// expected and what was found. Internal to sim/io.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/scenario.h"
#include "fleetsim/status.h"
#include "sim/io/yaml_tree.h"

namespace fleetsim {

using Names = std::vector<std::string_view>;

// "'a', 'b', 'c'": a list of expected names for a message.
std::string join_names(const Names& names);

class NodeReader {
 public:
  // Records a diagnostic unless kMaxDiagnostics are already recorded.
  void error(const SourceLoc& loc, std::string message);
  bool has_errors() const { return !diags_.empty(); }
  size_t error_count() const { return diags_.size(); }
  std::vector<Diagnostic> take_diagnostics() { return std::move(diags_); }

  // "unknown KIND 'got'WHERE (did you mean 'x'?); expected one of: ..."
  void unknown_name(const SourceLoc& loc, std::string_view kind, std::string_view got,
                    const Names& expected, std::string_view where = "");

  // Checks `n` is a mapping (else reports "expected a mapping for WHAT"),
  // that its keys are strings from `allowed` (did-you-mean otherwise), and
  // that no key repeats (reported at the repeat). False if not a mapping.
  bool check_map(const YamlNode& n, std::string_view what, const Names& allowed);
  // Like find(), but a missing key is reported at the mapping.
  const YamlNode* require(const YamlNode& map, std::string_view key, std::string_view what);

  // Scalar conversions; `what` names the value in messages ("job.steps").
  std::optional<std::string> as_string(const YamlNode& n, std::string_view what);
  std::optional<int64_t> as_int(const YamlNode& n, std::string_view what, int64_t min, int64_t max);
  std::optional<double> as_number(const YamlNode& n, std::string_view what);
  std::optional<bool> as_flag(const YamlNode& n, std::string_view what);  // true | false
  std::optional<Duration> as_duration(const YamlNode& n, std::string_view what);
  std::optional<int64_t> as_bytes(const YamlNode& n, std::string_view what);
  std::optional<double> as_percent(const YamlNode& n, std::string_view what);
  std::optional<double> as_bandwidth(const YamlNode& n, std::string_view what);
  std::optional<DType> as_dtype(const YamlNode& n, std::string_view what);

  // Reads map[key] into *dst when present; a bad value leaves *dst alone.
  template <typename T>
  void read_int(const YamlNode& map, std::string_view key, std::string_view prefix, int64_t min,
                int64_t max, T* dst) {
    if (const YamlNode* v = map.find(key)) {
      if (auto x = as_int(*v, path(prefix, key), min, max)) *dst = static_cast<T>(*x);
    }
  }
  void read_duration(const YamlNode& map, std::string_view key, std::string_view prefix, Duration* dst);

  static std::string path(std::string_view prefix, std::string_view key) {
    return prefix.empty() ? std::string(key) : std::string(prefix) + "." + std::string(key);
  }

 private:
  // A scalar's text, or a "expected EXPECTED for WHAT, got ..." diagnostic.
  const std::string* scalar_text(const YamlNode& n, std::string_view what, std::string_view expected);

  std::vector<Diagnostic> diags_;
};

}  // namespace fleetsim
