// Deterministic random numbers. Every draw comes from a stream named by
// (root seed, rank, purpose), so adding a rank, an op or a fault never shifts
// anyone else's draws. Draws are counter-based: a value depends only on its
// stream and its counter (e.g. step * ops + op), not on the order the engine
// happens to ask in. The distributions are our own (std:: distributions differ
// between standard libraries): integer mixing, committed tables, and libm's
// exp/log only in the normal's rare wedge and tail (see docs/engine.md).
#pragma once

#include <bit>
#include <cstdint>

#include "fleetsim/normal_tables.h"

namespace fleetsim {

// SplitMix64's finalizer: a bijective 64-bit mix with good avalanche.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Purposes of random streams. Append only: the values are part of the
// determinism contract (changing one changes every run's draws).
enum class Stream : uint64_t {
  kComputeJitter = 1,
  kCpuJitter = 2,
  kLogValue = 3,
  kJitterShape = 4,   // the extra draws of non-normal jitter (gamma's rejection loop)
  kIntermittent = 5,  // whether an intermittent straggler hits a rank in a step, and how hard
};

// The seed of one stream. Pure function of its arguments. The arguments enter
// one after another, each through its own mix (a SplitMix64 walk: the previous
// key plus the argument times the golden gamma, then mixed), never side by
// side: for a fixed root, distinct ranks give distinct streams (each step is a
// bijection), and no (root, rank) pair can stand in for another the way
// mix(a) ^ mix(b) ^ mix(c) lets swapped or offset arguments cancel.
constexpr uint64_t stream_seed(uint64_t root_seed, uint64_t rank, Stream purpose) {
  constexpr uint64_t kGamma = 0x9e3779b97f4a7c15ULL;
  uint64_t k = mix64(root_seed ^ 0x5851f42d4c957f2dULL);
  k = mix64(k + rank * kGamma);
  return mix64(k + static_cast<uint64_t>(purpose) * kGamma);
}

// The counter-th 64-bit value of a stream.
constexpr uint64_t draw_u64(uint64_t stream, uint64_t counter) {
  return mix64(stream ^ mix64(counter));
}

// Uniform in (0, 1): 53 random bits, never exactly 0 or 1.
inline double draw_uniform(uint64_t stream, uint64_t counter) {
  return (static_cast<double>(draw_u64(stream, counter) >> 11) + 0.5) * 0x1.0p-53;
}

namespace detail {
// The ziggurat's wedges, tail and retries: the 1.5% of draws the fast path leaves.
double draw_normal_slow(uint64_t first, uint64_t second);
}  // namespace detail

// Standard normal by a 256-layer ziggurat (normal_tables.h). The draw's first
// 64-bit value (counter 2c) picks the layer (bits 0-7), the sign (bit 8) and
// a 53-bit position (bits 11-63); 98.5% of draws stop there, with one
// integer compare and one multiplication. The rest use value 2c + 1 and, for a
// retry, a SplitMix64 walk seeded by it, so a normal uses counters 2c and 2c+1
// of its stream and nothing else.
inline double draw_normal(uint64_t stream, uint64_t counter) {
  const uint64_t w = draw_u64(stream, counter << 1);
  const uint64_t k = w & 0xff, j = w >> 11;
  if (j < normal_tables::kAccept[k]) [[likely]] {
    // x >= 0; bit 8 of w moved to the sign bit negates it without a branch
    // (a coin flip no predictor can learn).
    const double x = static_cast<double>(j) * normal_tables::kWidth[k];
    return std::bit_cast<double>(std::bit_cast<uint64_t>(x) ^ ((w & 0x100) << 55));
  }
  return detail::draw_normal_slow(w, draw_u64(stream, (counter << 1) | 1));
}

}  // namespace fleetsim
