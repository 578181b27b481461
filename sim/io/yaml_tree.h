// A plain tree of YAML nodes, each with its 1-based source location, built
// from yaml-cpp's parse. The loader reads this instead of YAML::Node so that
// it can see duplicate keys, whether a scalar was quoted, and where `--set`
// overrides came from. Internal to sim/io.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/status.h"

namespace fleetsim {

struct YamlNode {
  enum class Kind : uint8_t { kNull, kScalar, kSequence, kMap };
  Kind kind = Kind::kNull;
  std::string scalar;           // kScalar: the text, unquoted
  bool quoted = false;          // kScalar: written as '...' or "..."
  SourceLoc loc;                // where the node starts (the quote, for quoted scalars)
  std::vector<YamlNode> keys;   // kMap: keys, in file order, duplicates kept
  std::vector<YamlNode> items;  // kSequence: items; kMap: the value of keys[i]

  bool is_map() const { return kind == Kind::kMap; }
  bool is_seq() const { return kind == Kind::kSequence; }
  bool is_scalar() const { return kind == Kind::kScalar; }
  bool is_null() const { return kind == Kind::kNull; }
  // "a mapping", "a list", "nothing", or the scalar itself in quotes.
  std::string describe() const;
  // The value of the first `key` in a mapping; nullptr if absent or not a mapping.
  const YamlNode* find(std::string_view key) const;
};

// The most nodes a parsed document may hold, each use of an alias counted in
// full: a few lines of nested aliases must not expand into gigabytes.
inline constexpr int64_t kMaxYamlNodes = 2'000'000;

// Parses the first document of `text`. Locations name `file` and start at
// line `first_line`, with `col_offset` added to columns on that first line
// (for text that sits inside a longer line, as a --set value does). A YAML
// syntax error is appended to `diags` and false returned.
bool parse_yaml(std::string_view text, const std::string& file, int col_offset, YamlNode* out,
                std::vector<Diagnostic>* diags);

// Applies one "KEY=VALUE" override (KEY dotted, e.g. "job.steps"; a number
// segment indexes a list) to `root`, creating missing mappings. Nodes it
// creates are located in the label "--set KEY=VALUE". Errors go to `diags`.
void apply_override(std::string_view override_text, YamlNode* root, std::vector<Diagnostic>* diags);

}  // namespace fleetsim
