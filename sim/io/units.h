// Exact decimal numbers as they appear in scenario files ("1.5", "-3", "0.25"):
// the unit parsers of scenario_loader.h build on this, and the loader uses it
// to read plain numbers; and how every error message quotes a value the user
// gave (clip_value, quote_value), so a huge value is never echoed whole.
#pragma once

#include <cstddef>
#include <cstdint>
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
