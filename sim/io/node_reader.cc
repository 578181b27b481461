// Typed reads of YamlNode values with diagnostics (see node_reader.h).
#include "sim/io/node_reader.h"

#include "sim/io/scenario_loader.h"
#include "sim/io/units.h"
#include "fleetsim/expr.h"

namespace fleetsim {
namespace {

struct DTypeName {
  std::string_view name;
  DType type;
};
constexpr DTypeName kDTypes[] = {
    {"float", DType::kFloat},      {"float32", DType::kFloat},   {"fp32", DType::kFloat},
    {"bfloat16", DType::kBFloat16}, {"bf16", DType::kBFloat16},  {"half", DType::kHalf},
    {"float16", DType::kHalf},     {"fp16", DType::kHalf},       {"double", DType::kDouble},
    {"float64", DType::kDouble},   {"int", DType::kInt},         {"int32", DType::kInt},
    {"long", DType::kLong},        {"int64", DType::kLong},      {"byte", DType::kByte},
    {"uint8", DType::kByte},       {"float8", DType::kFloat8},   {"fp8", DType::kFloat8}};

}  // namespace

std::string join_names(const Names& names) {
  std::string s;
  for (std::string_view n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s;
}

void NodeReader::error(const SourceLoc& loc, std::string message) {
  if (diags_.size() >= static_cast<size_t>(kMaxDiagnostics)) return;
  diags_.push_back(Diagnostic{loc, std::move(message)});
}

void NodeReader::unknown_name(const SourceLoc& loc, std::string_view kind, std::string_view got,
                              const Names& expected, std::string_view where) {
  std::string msg = std::string("unknown ").append(kind) + " " + quote_value(got) + std::string(where);
  const std::string guess = closest_name(got, expected);
  if (!guess.empty()) msg += " (did you mean '" + guess + "'?)";
  error(loc, msg + "; expected one of: " + join_names(expected));
}

bool NodeReader::check_map(const YamlNode& n, std::string_view what, const Names& allowed) {
  if (!n.is_map()) {
    error(n.loc, std::string("expected a mapping for '").append(what) + "', got " + n.describe());
    return false;
  }
  for (size_t i = 0; i < n.keys.size(); ++i) {
    const YamlNode& k = n.keys[i];
    if (!k.is_scalar()) {
      error(k.loc, std::string("expected a key name in '").append(what) + "', got " + k.describe());
      continue;
    }
    bool dup = false;
    for (size_t j = 0; j < i && !dup; ++j) dup = n.keys[j].is_scalar() && n.keys[j].scalar == k.scalar;
    if (dup) {
      error(k.loc, "duplicate key " + quote_value(k.scalar) + std::string(" in '").append(what) + "'; each key may appear once");
      continue;
    }
    bool known = false;
    for (std::string_view a : allowed) known = known || a == k.scalar;
    if (!known) unknown_name(k.loc, "key", k.scalar, allowed, std::string(" in '").append(what) + "'");
  }
  return true;
}

const YamlNode* NodeReader::require(const YamlNode& map, std::string_view key, std::string_view what) {
  const YamlNode* v = map.find(key);
  if (!v) error(map.loc, std::string("missing required key '").append(key) + std::string("' in '").append(what) + "'");
  return v;
}

const std::string* NodeReader::scalar_text(const YamlNode& n, std::string_view what,
                                           std::string_view expected) {
  if (n.is_scalar()) return &n.scalar;
  error(n.loc, std::string("expected ").append(expected) + std::string(" for '").append(what) + "', got " + n.describe());
  return nullptr;
}

std::optional<std::string> NodeReader::as_string(const YamlNode& n, std::string_view what) {
  if (const std::string* s = scalar_text(n, what, "a string")) return *s;
  return std::nullopt;
}

std::optional<int64_t> NodeReader::as_int(const YamlNode& n, std::string_view what, int64_t min, int64_t max) {
  const std::string* s = scalar_text(n, what, "an integer");
  if (!s) return std::nullopt;
  Decimal d;
  if (parse_decimal(*s, &d) != s->size() || d.frac_digits > 0) {
    error(n.loc, std::string("expected an integer for '").append(what) + "', got " + quote_value(*s));
    return std::nullopt;
  }
  const int64_t v = d.negative ? -d.mantissa : d.mantissa;
  if (v < min || v > max) {
    std::string range = max == INT64_MAX ? ">= " + std::to_string(min)
                                         : "in " + std::to_string(min) + ".." + std::to_string(max);
    error(n.loc, std::string("'").append(what) + "' must be " + range + " (got " + clip_value(*s) + ")");
    return std::nullopt;
  }
  return v;
}

std::optional<double> NodeReader::as_number(const YamlNode& n, std::string_view what) {
  const std::string* s = scalar_text(n, what, "a number");
  if (!s) return std::nullopt;
  Decimal d;
  if (parse_decimal(*s, &d) != s->size()) {
    error(n.loc, std::string("expected a number like 1.3 for '").append(what) + "', got " + quote_value(*s));
    return std::nullopt;
  }
  return d.to_double();
}

std::optional<bool> NodeReader::as_flag(const YamlNode& n, std::string_view what) {
  const std::string* s = scalar_text(n, what, "true or false");
  if (!s) return std::nullopt;
  if (*s == "true") return true;
  if (*s == "false") return false;
  error(n.loc, std::string("expected true or false for '").append(what) + "', got " + quote_value(*s));
  return std::nullopt;
}

// The unit parsers share one shape: scalar text in, Result out, prefixed message.
#define FLEETSIM_UNIT_READER(method, type, parser, expected)                        \
  std::optional<type> NodeReader::method(const YamlNode& n, std::string_view what) { \
    const std::string* s = scalar_text(n, what, expected);                          \
    if (!s) return std::nullopt;                                                    \
    auto r = parser(*s);                                                            \
    if (r.ok()) return *r;                                                          \
    error(n.loc, std::string("'").append(what) + "': " + r.errors()[0].message);          \
    return std::nullopt;                                                            \
  }
FLEETSIM_UNIT_READER(as_duration, Duration, parse_duration, "a duration like 150ms")
FLEETSIM_UNIT_READER(as_bytes, int64_t, parse_bytes, "a size like 64MiB")
FLEETSIM_UNIT_READER(as_percent, double, parse_percent, "a percentage like 1%")
FLEETSIM_UNIT_READER(as_bandwidth, double, parse_bandwidth_GBps, "a bandwidth like 450GB/s")
#undef FLEETSIM_UNIT_READER

std::optional<DType> NodeReader::as_dtype(const YamlNode& n, std::string_view what) {
  const std::string* s = scalar_text(n, what, "a dtype name");
  if (!s) return std::nullopt;
  Names names;
  for (const auto& d : kDTypes) {
    if (d.name == *s) return d.type;
    names.push_back(d.name);
  }
  unknown_name(n.loc, "dtype", *s, names);
  return std::nullopt;
}

void NodeReader::read_duration(const YamlNode& map, std::string_view key, std::string_view prefix,
                               Duration* dst) {
  if (const YamlNode* v = map.find(key)) {
    if (auto d = as_duration(*v, path(prefix, key))) *dst = *d;
  }
}

}  // namespace fleetsim
