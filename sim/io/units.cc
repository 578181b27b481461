// Parsers for the unit-bearing scalars of scenario files and CLI flags:
// durations, sizes, percentages and bandwidths. Numbers are read as exact
// decimals (mantissa / 10^k) so "1.5GiB" and "0.1s" convert without any
// floating-point rounding; only percentages and bandwidths end as doubles.
#include <algorithm>
#include <cstdint>
#include <string>

#include "sim/io/scenario_loader.h"
#include "sim/io/units.h"

namespace fleetsim {
namespace {

struct UnitScale {
  std::string_view name;
  int64_t scale;
};

constexpr UnitScale kDurationUnits[] = {
    {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000},
    {"min", 60LL * 1000000000}, {"h", 3600LL * 1000000000}};
constexpr UnitScale kSizeUnits[] = {
    {"B", 1}, {"KB", 1000}, {"KiB", 1024}, {"MB", 1000000}, {"MiB", 1LL << 20},
    {"GB", 1000000000}, {"GiB", 1LL << 30}, {"TB", 1000000000000}, {"TiB", 1LL << 40}};

Diagnostic fail(std::string message) {
  Diagnostic d;
  d.message = std::move(message);
  return d;
}

std::string quoted(std::string_view s) { return quote_value(s); }

// Finds `unit` in `table`; on failure says which units were expected.
template <size_t N>
const UnitScale* find_unit(std::string_view unit, const UnitScale (&table)[N]) {
  for (const auto& u : table) if (u.name == unit) return &u;
  return nullptr;
}

template <size_t N>
std::string unit_list(const UnitScale (&table)[N]) {
  std::string s;
  for (const auto& u : table) {
    if (!s.empty()) s += ' ';
    s += u.name;
  }
  return s;
}

// Multiplies an exact decimal by `scale`: the result is round-half-up of
// mantissa * scale / 10^frac_digits, and `exact` says whether no rounding
// happened. False on overflow.
__extension__ typedef __int128 Int128;  // mantissa (< 10^18) * scale (< 2^42) fits

bool scale_decimal(const Decimal& d, int64_t scale, int64_t* out, bool* exact) {
  Int128 v = static_cast<Int128>(d.mantissa) * scale;
  Int128 div = 1;
  for (int i = 0; i < d.frac_digits; ++i) div *= 10;
  *exact = v % div == 0;
  v = (v + div / 2) / div;
  if (v > INT64_MAX) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

}  // namespace

size_t parse_decimal(std::string_view text, Decimal* out) {
  size_t i = 0;
  Decimal d;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) d.negative = text[i++] == '-';
  const size_t digits_start = i;
  bool any_digit = false, dot = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !dot) { dot = true; continue; }
    if (c < '0' || c > '9') break;
    any_digit = true;
    if (d.mantissa > (INT64_MAX - 9) / 10 || d.frac_digits >= 18) return 0;  // too many digits
    d.mantissa = d.mantissa * 10 + (c - '0');
    if (dot) ++d.frac_digits;
  }
  if (!any_digit || i == digits_start) return 0;
  if (text[i - 1] == '.') return 0;  // "1." is not a number here
  *out = d;
  return i;
}

namespace {

// Splits "<decimal><spaces><unit>"; false if no number leads the text.
bool split_number(std::string_view text, Decimal* num, std::string_view* unit) {
  const size_t n = parse_decimal(text, num);
  if (n == 0) return false;
  size_t u = n;
  while (u < text.size() && text[u] == ' ') ++u;
  *unit = text.substr(u);
  return true;
}

}  // namespace

Result<Duration> parse_duration(std::string_view text) {
  Decimal num;
  std::string_view unit;
  if (!split_number(text, &num, &unit)) {
    return fail("expected a duration like 150ms or 1.5s (units: ns us ms s min h), got " + quoted(text));
  }
  if (num.negative && num.mantissa != 0) {
    return fail("duration " + quoted(text) + " is negative; expected a duration >= 0");
  }
  if (unit.empty()) {
    if (num.mantissa == 0) return Duration{};
    return fail("duration " + quoted(text) + " has no unit; expected one of: ns us ms s min h");
  }
  const UnitScale* u = find_unit(unit, kDurationUnits);
  if (!u) {
    return fail("unknown duration unit " + quoted(unit) + " in " + quoted(text) +
                "; expected one of: " + unit_list(kDurationUnits));
  }
  int64_t ns = 0;
  bool exact = false;
  if (!scale_decimal(num, u->scale, &ns, &exact)) return fail("duration " + quoted(text) + " is too large");
  return Duration{ns};
}

Result<int64_t> parse_bytes(std::string_view text) {
  Decimal num;
  std::string_view unit;
  if (!split_number(text, &num, &unit)) {
    return fail("expected a size like 64MiB or 4096 (units: " + unit_list(kSizeUnits) + "), got " +
                quoted(text));
  }
  if (num.negative && num.mantissa != 0) return fail("size " + quoted(text) + " is negative; expected a size >= 0");
  int64_t scale = 1;
  if (unit.empty()) {
    if (num.frac_digits > 0) {
      return fail("size " + quoted(text) + " without a unit must be a whole number of bytes; "
                  "expected an integer or a unit (" + unit_list(kSizeUnits) + ")");
    }
  } else {
    const UnitScale* u = find_unit(unit, kSizeUnits);
    if (!u) {
      return fail("unknown size unit " + quoted(unit) + " in " + quoted(text) +
                  "; expected one of: " + unit_list(kSizeUnits));
    }
    scale = u->scale;
  }
  int64_t bytes = 0;
  bool exact = false;
  if (!scale_decimal(num, scale, &bytes, &exact)) return fail("size " + quoted(text) + " is too large");
  if (!exact) return fail("size " + quoted(text) + " is not a whole number of bytes");
  return bytes;
}

Result<double> parse_percent(std::string_view text) {
  Decimal num;
  std::string_view unit;
  if (!split_number(text, &num, &unit) || unit != "%") {
    return fail("expected a percentage like 1% or 0.5%, got " + quoted(text));
  }
  if (num.negative && num.mantissa != 0) return fail("percentage " + quoted(text) + " is negative; expected >= 0%");
  return num.to_double() / 100.0;
}

Result<double> parse_bandwidth_GBps(std::string_view text) {
  Decimal num;
  std::string_view unit;
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"GB/s", 1.0}, {"Gb/s", 0.125}, {"TB/s", 1000.0}, {"Tb/s", 125.0}, {"MB/s", 1e-3}, {"Mb/s", 1.25e-4}};
  if (!split_number(text, &num, &unit)) {
    return fail("expected a bandwidth like 450GB/s or 400Gb/s (units: GB/s Gb/s TB/s Tb/s MB/s Mb/s), got " +
                quoted(text));
  }
  for (const auto& [name, factor] : kUnits) {
    if (unit != name) continue;
    if (num.negative || num.mantissa == 0) return fail("bandwidth " + quoted(text) + " must be > 0");
    return num.to_double() * factor;
  }
  return fail("unknown bandwidth unit " + quoted(unit) + " in " + quoted(text) +
              "; expected one of: GB/s Gb/s TB/s Tb/s MB/s Mb/s (B = bytes, b = bits)");
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string clip_value(std::string_view value) {
  if (value.size() <= kMaxQuotedChars) return std::string(value);
  return std::string(value.substr(0, kMaxQuotedChars)) + "... (" + std::to_string(value.size()) + " characters)";
}

std::string quote_value(std::string_view value) { return "'" + clip_value(value) + "'"; }

}  // namespace fleetsim
