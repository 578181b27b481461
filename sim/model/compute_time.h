// How long each compute kernel and CPU op takes: the op's time, jitter drawn
// from the rank's counter-based stream, and straggler faults. A pure function
// of (plan, rank, step, op): the simulator and the real runners in validate/
// sample the same durations, and nothing depends on the order of the calls.
#pragma once

#include <cstdint>
#include <vector>

#include "fleetsim/plan.h"

namespace fleetsim {

class ComputeTime {
 public:
  explicit ComputeTime(const Plan& plan);

  // Nanoseconds op `op_index` (kCompute or kCpu) takes when `rank` issues it at
  // `step`. REQUIRES: 0 <= rank < plan.ranks, 1 <= step <= job.steps.
  int64_t sample_ns(int rank, int64_t step, uint32_t op_index) const;

  // The same without jitter or faults (the jitter-free baseline).
  int64_t nominal_ns(uint32_t op_index) const;

 private:
  const Plan& plan_;
  std::vector<uint64_t> gpu_stream_, cpu_stream_;  // per rank
  std::vector<uint8_t> has_straggler_;             // per rank
};

}  // namespace fleetsim
