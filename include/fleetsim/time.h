// Simulated time: integer nanoseconds, typed so a point in time and a span of time
// cannot be mixed up. Models may compute in double; they convert exactly once,
// through round_to_duration(), so every rounding decision lives in one place.
#pragma once

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>
#include <string>

namespace fleetsim {

// A span of simulated time in nanoseconds. May be negative only as an
// intermediate (a difference); the engine asserts non-negative where it matters.
struct Duration {
  int64_t ns = 0;

  static constexpr Duration nanos(int64_t v) { return {v}; }
  static constexpr Duration micros(int64_t v) { return {v * 1000}; }
  static constexpr Duration millis(int64_t v) { return {v * 1000 * 1000}; }
  static constexpr Duration seconds(int64_t v) { return {v * 1000 * 1000 * 1000}; }
  static constexpr Duration minutes(int64_t v) { return seconds(v * 60); }
  static constexpr Duration max() { return {std::numeric_limits<int64_t>::max()}; }

  constexpr double to_seconds() const { return static_cast<double>(ns) / 1e9; }
  constexpr double to_millis() const { return static_cast<double>(ns) * 1e-6; }
  constexpr double to_micros() const { return static_cast<double>(ns) * 1e-3; }

  constexpr auto operator<=>(const Duration&) const = default;
  constexpr Duration operator+(Duration o) const { return {ns + o.ns}; }
  constexpr Duration operator-(Duration o) const { return {ns - o.ns}; }
  constexpr Duration& operator+=(Duration o) { ns += o.ns; return *this; }
};

// A point on the simulated clock: nanoseconds since the job started (t = 0).
struct SimTime {
  int64_t ns = 0;

  static constexpr SimTime zero() { return {0}; }
  static constexpr SimTime never() { return {std::numeric_limits<int64_t>::max()}; }

  constexpr double to_seconds() const { return static_cast<double>(ns) / 1e9; }
  constexpr auto operator<=>(const SimTime&) const = default;
  constexpr SimTime operator+(Duration d) const { return {ns + d.ns}; }
  constexpr Duration operator-(SimTime o) const { return {ns - o.ns}; }
};

// The one place a double becomes simulated time: round half away from zero to
// whole nanoseconds. REQUIRES: seconds is finite.
inline Duration round_to_duration(double seconds) {
  return Duration{static_cast<int64_t>(std::llround(seconds * 1e9))};
}

// Formats ns as seconds with all nine decimals ("12.000000345"): exact, and
// byte-stable across platforms (integer arithmetic only).
std::string format_seconds(int64_t ns);

}  // namespace fleetsim
