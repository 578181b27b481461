// Compute-time sampling. Jitter is a normal with the op's coefficient of
// variation, truncated at zero; the draw's counter is step * ops + op, so a
// value depends only on what it is for (see include/fleetsim/rng.h).
#include "sim/model/compute_time.h"

#include <algorithm>

#include "fleetsim/rng.h"

namespace fleetsim {

ComputeTime::ComputeTime(const Plan& plan)
    : plan_(plan),
      gpu_stream_(static_cast<size_t>(plan.ranks)),
      cpu_stream_(static_cast<size_t>(plan.ranks)),
      has_straggler_(static_cast<size_t>(plan.ranks), 0) {
  const uint64_t seed = plan.scenario.job.seed;
  for (size_t r = 0; r < gpu_stream_.size(); ++r) {
    gpu_stream_[r] = stream_seed(seed, r, Stream::kComputeJitter);
    cpu_stream_[r] = stream_seed(seed, r, Stream::kCpuJitter);
  }
  for (const Fault& f : plan.stragglers)
    for (int r : f.ranks) has_straggler_[static_cast<size_t>(r)] = 1;
}

int64_t ComputeTime::nominal_ns(uint32_t op_index) const { return plan_.ops[op_index].time.ns; }

int64_t ComputeTime::sample_ns(int rank, int64_t step, uint32_t op_index) const {
  const auto ru = static_cast<size_t>(rank);
  const PlanOp& op = plan_.ops[op_index];
  const bool cpu = op.kind == OpKind::kCpu;
  double t = static_cast<double>(op.time.ns);
  if (op.jitter_cv > 0) {
    const uint64_t counter = static_cast<uint64_t>(step) * plan_.ops.size() + op_index;
    const double z = draw_normal(cpu ? cpu_stream_[ru] : gpu_stream_[ru], counter);
    t *= std::max(0.0, 1.0 + op.jitter_cv * z);
  }
  if (!cpu && has_straggler_[ru]) {
    for (const Fault& f : plan_.stragglers) {
      if (step < f.from_step || step > f.to_step) continue;
      if (std::find(f.ranks.begin(), f.ranks.end(), rank) != f.ranks.end()) t *= f.slowdown;
    }
  }
  return round_to_duration(t / 1e9).ns;
}

}  // namespace fleetsim
