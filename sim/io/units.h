// Exact decimal numbers as they appear in scenario files ("1.5", "-3", "0.25"):
// the unit parsers of scenario_loader.h build on this, and the loader uses it
// to read plain numbers; and how every error message quotes a value the user
// gave (clip_value, quote_value), so a huge value is never echoed whole.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fleetsim {

// The value is (negative ? -1 : 1) * mantissa / 10^frac_digits, exactly.
struct Decimal {
  bool negative = false;
  int64_t mantissa = 0;
  int frac_digits = 0;

  double to_double() const {
    double v = static_cast<double>(mantissa);
    for (int i = 0; i < frac_digits; ++i) v /= 10.0;
    return negative ? -v : v;
  }
};

// Parses the longest decimal number at the start of `text` (optional sign,
// digits, optional '.' and digits). Returns how many characters it used, or 0
// if `text` does not start with a number or the number has over 18 digits.
size_t parse_decimal(std::string_view text, Decimal* out);

// The integer that is the whole of `text` (an optional '-' and decimal digits),
// or nothing when `text` is anything else or the value does not fit in T. For
// numbers read from evidence (logs, dumps, file names), where std::stoi would
// throw on a 20-digit run of digits.
template <typename T>
std::optional<T> parse_int(std::string_view text) {
  T v{};
  const char* end = text.data() + text.size();
  auto [next, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || next != end || text.empty()) return std::nullopt;
  return v;
}

// Values quoted in error messages are cut to this many characters.
inline constexpr size_t kMaxQuotedChars = 200;
// `value` as an error message shows it: whole up to kMaxQuotedChars, else its
// first kMaxQuotedChars characters, "..." and its total length.
std::string clip_value(std::string_view value);
// The same in single quotes: 'value'.
std::string quote_value(std::string_view value);

// The items of a comma-separated command-line list ("a,b,,c" -> a, b, c).
std::vector<std::string> split_list(const std::string& s);

}  // namespace fleetsim
