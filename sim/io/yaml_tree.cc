// Builds the YamlNode tree from yaml-cpp's parse and applies --set overrides.
// yaml-cpp marks are 0-based; every location here is 1-based, as GCC prints.
#include "sim/io/yaml_tree.h"
#include "sim/io/units.h"

#include <yaml-cpp/yaml.h>

namespace fleetsim {
namespace {

constexpr int kMaxDepth = 64;  // also stops alias cycles

struct Converter {
  std::string_view text;
  const std::string& file;
  int col_offset;
  std::vector<Diagnostic>* diags;
  bool too_deep = false;
  int64_t nodes = 0;  // converted so far, each alias counted at every use
  bool too_many = false;

  SourceLoc loc_of(const YAML::Mark& m) const {
    SourceLoc loc;
    loc.file = file;
    loc.line = m.line < 0 ? 1 : m.line + 1;
    loc.col = m.column < 0 ? 1 : m.column + 1;
    if (loc.line == 1) loc.col += col_offset;
    return loc;
  }

  void convert(const YAML::Node& n, int depth, YamlNode* out) {
    if (depth > kMaxDepth) {
      if (!too_deep) diags->push_back({loc_of(n.Mark()), "YAML nested too deeply (over 64 levels)"});
      too_deep = true;
      return;
    }
    if (too_many) return;
    if (++nodes > kMaxYamlNodes) {
      diags->push_back({loc_of(n.Mark()), "YAML expands to more than " + std::to_string(kMaxYamlNodes) +
                                              " nodes (aliases counted at each use); expected a smaller document"});
      too_many = true;
      return;
    }
    out->loc = loc_of(n.Mark());
    switch (n.Type()) {
      case YAML::NodeType::Scalar: {
        out->kind = YamlNode::Kind::kScalar;
        out->scalar = n.Scalar();
        const int pos = n.Mark().pos;
        out->quoted = pos >= 0 && static_cast<size_t>(pos) < text.size() &&
                      (text[static_cast<size_t>(pos)] == '"' || text[static_cast<size_t>(pos)] == '\'');
        break;
      }
      case YAML::NodeType::Sequence:
        out->kind = YamlNode::Kind::kSequence;
        for (const auto& item : n) convert(item, depth + 1, &out->items.emplace_back());
        break;
      case YAML::NodeType::Map:
        out->kind = YamlNode::Kind::kMap;
        for (auto it = n.begin(); it != n.end(); ++it) {
          YamlNode& key = out->keys.emplace_back();
          convert(it->first, depth + 1, &key);
          YamlNode& value = out->items.emplace_back();
          convert(it->second, depth + 1, &value);
          // yaml-cpp places an empty value at the next token; point at its key instead.
          if (value.is_null()) value.loc = key.loc;
        }
        break;
      default:
        out->kind = YamlNode::Kind::kNull;
        break;
    }
  }
};

}  // namespace

std::string YamlNode::describe() const {
  switch (kind) {
    case Kind::kNull: return "nothing";
    case Kind::kMap: return "a mapping";
    case Kind::kSequence: return "a list";
    case Kind::kScalar: return quote_value(scalar);
  }
  return "?";
}

const YamlNode* YamlNode::find(std::string_view key) const {
  if (!is_map()) return nullptr;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].is_scalar() && keys[i].scalar == key) return &items[i];
  }
  return nullptr;
}

bool parse_yaml(std::string_view text, const std::string& file, int col_offset, YamlNode* out,
                std::vector<Diagnostic>* diags) {
  Converter c{text, file, col_offset, diags};
  const size_t before = diags->size();
  try {
    const YAML::Node root = YAML::Load(std::string(text));
    c.convert(root, 0, out);
  } catch (const YAML::ParserException& e) {
    diags->push_back({c.loc_of(e.mark), "YAML syntax error: " + e.msg});
  } catch (const YAML::Exception& e) {
    diags->push_back({c.loc_of(e.mark), "cannot read YAML: " + e.msg});
  }
  return diags->size() == before;
}

void apply_override(std::string_view override_text, YamlNode* root, std::vector<Diagnostic>* diags) {
  const std::string label = std::string("--set ").append(override_text);
  constexpr int kPrefix = 6;  // columns taken by "--set " in the label
  auto fail = [&](size_t offset, std::string message) {
    diags->push_back({SourceLoc{label, 1, kPrefix + static_cast<int>(offset) + 1}, std::move(message)});
  };
  const size_t eq = override_text.find('=');
  if (eq == std::string_view::npos) {
    return fail(0, std::string("override '").append(override_text) + "' has no '='; expected KEY=VALUE, e.g. job.steps=10");
  }
  if (eq == 0) return fail(0, "override has no key before '='; expected KEY=VALUE, e.g. job.steps=10");
  YamlNode value;
  const std::string_view value_text = override_text.substr(eq + 1);
  if (!parse_yaml(value_text, label, kPrefix + static_cast<int>(eq) + 1, &value, diags)) return;
  if (value.is_null()) value.loc = SourceLoc{label, 1, kPrefix + static_cast<int>(eq) + 2};

  YamlNode* cur = root;
  size_t seg_start = 0;
  const std::string_view key = override_text.substr(0, eq);
  while (true) {
    const size_t dot = key.find('.', seg_start);
    const std::string_view seg = key.substr(seg_start, dot == std::string_view::npos ? dot : dot - seg_start);
    if (seg.empty()) return fail(seg_start, std::string("empty key segment in '").append(key) + "'; expected KEY like job.steps");
    if (cur->is_null()) {
      cur->kind = YamlNode::Kind::kMap;
      cur->loc = SourceLoc{label, 1, kPrefix + static_cast<int>(seg_start) + 1};
    }
    YamlNode* next = nullptr;
    if (cur->is_map()) {
      for (size_t i = 0; i < cur->keys.size() && !next; ++i) {
        if (cur->keys[i].is_scalar() && cur->keys[i].scalar == seg) next = &cur->items[i];
      }
      if (!next) {
        YamlNode k;
        k.kind = YamlNode::Kind::kScalar;
        k.scalar = std::string(seg);
        k.loc = SourceLoc{label, 1, kPrefix + static_cast<int>(seg_start) + 1};
        cur->keys.push_back(std::move(k));
        next = &cur->items.emplace_back();
        next->loc = cur->keys.back().loc;
      }
    } else if (cur->is_seq() && !seg.empty() && seg.find_first_not_of("0123456789") == std::string_view::npos &&
               seg.size() < 9 && std::stoul(std::string(seg)) < cur->items.size()) {
      next = &cur->items[std::stoul(std::string(seg))];
    } else {
      return fail(seg_start, std::string("cannot set '").append(key) + std::string("': '").append(key.substr(0, seg_start ? seg_start - 1 : 0)) +
                                 "' is " + cur->describe() + std::string(", not a mapping with key '").append(seg) + "'");
    }
    cur = next;
    if (dot == std::string_view::npos) break;
    seg_start = dot + 1;
  }
  *cur = std::move(value);
}

}  // namespace fleetsim
