// How long each compute kernel and CPU op takes: the op's time, jitter drawn
// from the rank's counter-based stream (normal, lognormal, gamma or empirical),
// and the compute-time faults (persistent, intermittent, pauses, throttling).
// A pure function of (plan, rank, step, op): the simulator, the lockstep
// executor and the real runners in validate/ sample the same durations, and
// nothing depends on the order of the calls.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetsim/plan.h"
#include "fleetsim/time.h"

namespace fleetsim {

// One draw of a mean-1 jitter variate X (see Jitter in scenario.h). `stream` is
// the rank's jitter stream, `shape_stream` the one gamma's rejection loop uses,
// `counter` what the draw is for. Exposed for tests and the closed forms.
struct JitterSampler {
  JitterDist dist = JitterDist::kNormal;
  double cv = 0;
  double mu = 0, s = 0;          // kLognormal
  double shape = 0, d = 0, c = 0;  // kGamma (Marsaglia-Tsang constants for shape >= 1)
  const std::vector<double>* samples = nullptr;  // kEmpirical
  bool active = false;

  static JitterSampler make(const Jitter& j);
  double draw(uint64_t stream, uint64_t shape_stream, uint64_t counter) const;
};

class ComputeTime {
 public:
  explicit ComputeTime(const Plan& plan);

  // Nanoseconds op `op_index` (kCompute or kCpu) takes when `rank` issues it at
  // `step`. REQUIRES: 0 <= rank < plan.ranks, 1 <= step <= job.steps.
  int64_t sample_ns(int rank, int64_t step, uint32_t op_index) const;
  // Cache hint only (no effect on any value): the per-rank words sample_ns reads.
  void prefetch(int rank) const {
    const auto ru = static_cast<size_t>(rank);
    __builtin_prefetch(&gpu_stream_[ru]);
    __builtin_prefetch(&cpu_stream_[ru]);
    __builtin_prefetch(&has_straggler_[ru]);
  }

  // What add_all does with its `compute` array.
  enum class Sum : uint8_t { kAdd, kStore };
  // The clocks' range after add_all: lowest, highest, and the lowest rank at the highest.
  struct ClockRange {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    int hi_rank = -1;
  };
  // How much of the range add_all finds: kFull all of it, kHigh the highest
  // and its rank only (lo stays INT64_MAX; a pass the caller may not need).
  enum class Span : uint8_t { kHigh, kFull };

  // Adds sample_ns(r, step, op) to clock[r] for every rank, and to compute[r]
  // (or stores it there, `sum`) when compute is not null: the lockstep
  // executor's hot loop, with the per-op work hoisted out of it. Same values
  // as sample_ns, to the nanosecond. Fills *range (as `span` says) when not null.
  void add_all(int64_t step, uint32_t op_index, int64_t* clock, int64_t* compute, Sum sum = Sum::kAdd,
               ClockRange* range = nullptr, Span span = Span::kFull) const;

  // The same without jitter or faults (the jitter-free baseline).
  int64_t nominal_ns(uint32_t op_index) const;
  // Whether add_all adds one duration, *ns, to every rank's clock for op
  // `op_index` at every step: a compute op without jitter, no compute-time faults.
  bool same_for_all(uint32_t op_index, int64_t* ns) const;

  // The jitter of plan op `op_index` (in compile order).
  const Jitter& jitter(uint32_t op_index) const { return *jitter_[op_index]; }
  // The op a pause fault lengthens: the first compute op outside any `when`
  // (UINT32_MAX if the program has none).
  uint32_t pause_op() const { return pause_op_; }
  // Bytes this object holds per rank (for the memory benchmarks).
  static constexpr size_t kBytesPerRank = 2 * sizeof(uint64_t) + 1;

 private:
  double fault_factor(int rank, int64_t step, uint32_t op_index, double t) const;
  template <bool kFaults, int kCompute, bool kLow>
  ClockRange add_normal(int64_t step, uint32_t op_index, int64_t* clock, int64_t* compute) const;
  template <int kCompute>
  ClockRange add_sampled(int64_t step, uint32_t op_index, int64_t* clock, int64_t* compute) const;

 public:
  // t nanoseconds rounded as round_to_duration(t / 1e9).ns rounds them (the
  // durations every executor uses), without its division where it cannot matter.
  // Inline: the per-rank loops (and the benchmarks' floor program) round in place.
  static int64_t to_ns(double t);

 private:

  const Plan& plan_;
  std::vector<const Jitter*> jitter_;              // per plan op
  std::vector<JitterSampler> samplers_;            // per plan op
  std::vector<uint64_t> gpu_stream_, cpu_stream_;  // per rank
  std::vector<uint8_t> has_straggler_;             // per rank: some compute-time fault names it
  uint32_t pause_op_ = UINT32_MAX;
};

// A copy of `plan` with every jitter and every fault removed: the jitter-free
// baseline the straggler tax is measured against.
Plan jitter_free(const Plan& plan);

// round_to_duration(t / 1e9).ns, which rounds y = fl(fl(t / 1e9) * 1e9) half
// away from zero: floor(y + 0.5). Two roundings put y within 2^-52 * t (and a
// hair) of t, so floor(y + 0.5) is known without the division when the floors
// of t + 0.5 -+ 2^-50 * t agree (their own roundings leave room to spare): no
// half-integer lies near t (and 2 <= t < 2^50 keeps y in [1, 2^52)).
// Otherwise y itself is rounded; for 1 <= y < 2^52, y - trunc(y) is exact, so
// comparing it with 0.5 rounds half away from zero as llround does.
inline int64_t ComputeTime::to_ns(double t) {
  if (t >= 2 && t < 0x1p50) [[likely]] {
    const double h = t + 0.5, e = t * 0x1p-50;
    const auto below = static_cast<int64_t>(h - e), above = static_cast<int64_t>(h + e);
    if (below == above) [[likely]] return below;
  }
  const double y = t / 1e9 * 1e9;
  if (y >= 1 && y < 0x1p52) {
    const auto whole = static_cast<int64_t>(y);
    return whole + (y - static_cast<double>(whole) >= 0.5 ? 1 : 0);
  }
  return round_to_duration(t / 1e9).ns;
}

}  // namespace fleetsim
