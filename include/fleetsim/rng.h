// Deterministic random numbers. Every draw comes from a stream named by
// (root seed, rank, purpose), so adding a rank, an op or a fault never shifts
// anyone else's draws. Draws are counter-based: a value depends only on its
// stream and its counter (e.g. step * ops + op), not on the order the engine
// happens to ask in. The distributions are our own (std:: distributions differ
// between standard libraries); only integer mixing and libm's log/sqrt/cos are used.
#pragma once

#include <cstdint>

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

// The seed of one stream. Pure function of its arguments.
constexpr uint64_t stream_seed(uint64_t root_seed, uint64_t rank, Stream purpose) {
  return mix64(mix64(root_seed) ^ mix64(rank * 0x632be59bd9b4e019ULL + 1) ^
               mix64(static_cast<uint64_t>(purpose) * 0x85ebca6b2c1b3c4dULL + 7));
}

// The counter-th 64-bit value of a stream.
constexpr uint64_t draw_u64(uint64_t stream, uint64_t counter) {
  return mix64(stream ^ mix64(counter));
}

// Uniform in (0, 1): 53 random bits, never exactly 0 or 1.
inline double draw_uniform(uint64_t stream, uint64_t counter) {
  return (static_cast<double>(draw_u64(stream, counter) >> 11) + 0.5) * 0x1.0p-53;
}

// Standard normal by Box-Muller from two uniforms derived from the counter.
double draw_normal(uint64_t stream, uint64_t counter);

}  // namespace fleetsim
