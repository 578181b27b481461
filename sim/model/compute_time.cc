// Compute-time sampling. Jitter multiplies the op's time by a mean-1 draw whose
// counter is step * ops + op, so a value depends only on what it is for (see
// include/fleetsim/rng.h). Compute-time faults then stretch GPU kernels:
// persistent x slowdown, intermittent x slowdown * X with a per-step chance,
// throttling x the schedule's factor, and a pause adds its time to the rank's
// first compute op of the step (the GPU idles while the host collects garbage
// or writes a checkpoint; modelling it there keeps the op count unchanged).
#include "sim/model/compute_time.h"

#include <algorithm>
#include <cmath>

#include "fleetsim/rng.h"

namespace fleetsim {

const char* jitter_dist_name(JitterDist d) {
  switch (d) {
    case JitterDist::kNormal: return "normal";
    case JitterDist::kLognormal: return "lognormal";
    case JitterDist::kGamma: return "gamma";
    case JitterDist::kEmpirical: return "empirical";
  }
  return "?";
}

JitterSampler JitterSampler::make(const Jitter& j) {
  JitterSampler s;
  s.dist = j.dist;
  s.cv = j.cv;
  s.active = j.active();
  if (j.dist == JitterDist::kLognormal && j.cv > 0) {
    s.s = std::sqrt(std::log1p(j.cv * j.cv));
    s.mu = -0.5 * s.s * s.s;
  }
  if (j.dist == JitterDist::kGamma && j.cv > 0) {
    s.shape = 1.0 / (j.cv * j.cv);
    const double a = s.shape < 1 ? s.shape + 1 : s.shape;  // boosted below 1
    s.d = a - 1.0 / 3.0;
    s.c = 1.0 / std::sqrt(9.0 * s.d);
  }
  if (j.dist == JitterDist::kEmpirical) s.samples = &j.samples;
  return s;
}

double JitterSampler::draw(uint64_t stream, uint64_t shape_stream, uint64_t counter) const {
  switch (dist) {
    case JitterDist::kNormal:
      return std::max(0.0, 1.0 + cv * draw_normal(stream, counter));
    case JitterDist::kLognormal:
      return std::exp(mu + s * draw_normal(stream, counter));
    case JitterDist::kEmpirical: {
      const std::vector<double>& v = *samples;
      const double p = draw_uniform(stream, counter) * static_cast<double>(v.size() - 1);
      const auto i = std::min(static_cast<size_t>(p), v.size() - 2);
      return v[i] + (p - static_cast<double>(i)) * (v[i + 1] - v[i]);
    }
    case JitterDist::kGamma:
      break;
  }
  // Marsaglia-Tsang: attempt j draws a normal from uniforms 4m, 4m+1 and the
  // acceptance uniform 4m+2 (m = counter << 5 | j) of the shape stream; the
  // boost for shape < 1 uses uniform 4m+3 of the last m. Acceptance is > 95%.
  constexpr uint64_t kAttempts = 31;
  double x = 1.0;
  for (uint64_t j = 0; j < kAttempts; ++j) {
    const uint64_t m = (counter << 5) | j;
    const double z = draw_normal(shape_stream, m << 1);
    const double t = 1.0 + c * z;
    if (t <= 0) continue;
    const double v = t * t * t;
    const double u = draw_uniform(shape_stream, (m << 2) | 2);
    if (std::log(u) < 0.5 * z * z + d - d * v + d * std::log(v)) {
      x = d * v;
      break;
    }
  }
  if (shape < 1) {
    const double u = draw_uniform(shape_stream, (((counter << 5) | kAttempts) << 2) | 3);
    x *= std::pow(u, 1.0 / shape);
  }
  return x / shape;  // scale 1/shape: mean 1
}

namespace {

// The scenario's ops in compile order (compile_plan emits `do` then `else`,
// depth first), with whether each sits outside every `when`.
void flatten(const std::vector<Op>& ops, bool top, std::vector<const Op*>* out, std::vector<bool>* at_top) {
  for (const Op& op : ops) {
    if (op.kind == OpKind::kWhen) {
      flatten(op.then_ops, false, out, at_top);
      flatten(op.else_ops, false, out, at_top);
      continue;
    }
    out->push_back(&op);
    at_top->push_back(top);
  }
}

bool names_rank(const Fault& f, int rank) {
  return f.all_ranks || std::find(f.ranks.begin(), f.ranks.end(), rank) != f.ranks.end();
}

}  // namespace

ComputeTime::ComputeTime(const Plan& plan)
    : plan_(plan),
      gpu_stream_(static_cast<size_t>(plan.ranks)),
      cpu_stream_(static_cast<size_t>(plan.ranks)),
      has_straggler_(static_cast<size_t>(plan.ranks), 0) {
  std::vector<const Op*> ops;
  std::vector<bool> top;
  flatten(plan.scenario.step, true, &ops, &top);
  FLEETSIM_CHECK(ops.size() == plan.ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    FLEETSIM_CHECK(ops[i]->kind == plan.ops[i].kind);
    jitter_.push_back(&ops[i]->jitter);
    samplers_.push_back(JitterSampler::make(ops[i]->jitter));
    if (pause_op_ == UINT32_MAX && top[i] && ops[i]->kind == OpKind::kCompute) pause_op_ = static_cast<uint32_t>(i);
  }
  const uint64_t seed = plan.scenario.job.seed;
  for (size_t r = 0; r < gpu_stream_.size(); ++r) {
    gpu_stream_[r] = stream_seed(seed, r, Stream::kComputeJitter);
    cpu_stream_[r] = stream_seed(seed, r, Stream::kCpuJitter);
  }
  for (const Fault& f : plan.stragglers) {
    if (f.all_ranks) std::fill(has_straggler_.begin(), has_straggler_.end(), 1);
    for (int r : f.ranks) has_straggler_[static_cast<size_t>(r)] = 1;
  }
}

int64_t ComputeTime::nominal_ns(uint32_t op_index) const { return plan_.ops[op_index].time.ns; }

bool ComputeTime::same_for_all(uint32_t op_index, int64_t* ns) const {
  const PlanOp& op = plan_.ops[op_index];
  if (op.kind != OpKind::kCompute || samplers_[op_index].active || !plan_.stragglers.empty()) return false;
  *ns = to_ns(static_cast<double>(op.time.ns));  // sample_ns's value on every rank
  return true;
}

int64_t ComputeTime::sample_ns(int rank, int64_t step, uint32_t op_index) const {
  const auto ru = static_cast<size_t>(rank);
  const PlanOp& op = plan_.ops[op_index];
  const bool cpu = op.kind == OpKind::kCpu;
  double t = static_cast<double>(op.time.ns);
  const JitterSampler& js = samplers_[op_index];
  if (js.active) {
    const uint64_t counter = static_cast<uint64_t>(step) * plan_.ops.size() + op_index;
    const uint64_t shape_stream =
        js.dist == JitterDist::kGamma ? stream_seed(plan_.scenario.job.seed, ru, Stream::kJitterShape) : 0;
    t *= js.draw(cpu ? cpu_stream_[ru] : gpu_stream_[ru], shape_stream, counter);
  }
  if (!cpu && has_straggler_[ru]) t = fault_factor(rank, step, op_index, t);
  return to_ns(t);
}

namespace {

// kCompute: 0 leaves the compute array alone, 1 adds to it, 2 stores into it.
// kLow: whether the range's lowest clock is kept (the highest always is).
template <int kCompute, bool kLow = true>
inline void put(int64_t* clock, int64_t* compute, size_t r, int64_t d, ComputeTime::ClockRange* range,
                size_t* hi_rank) {
  const int64_t c = clock[r] += d;
  if constexpr (kCompute == 1) compute[r] += d;
  if constexpr (kCompute == 2) compute[r] = d;
  if constexpr (kLow) range->lo = std::min(range->lo, c);
  if (c > range->hi) {
    range->hi = c;
    *hi_rank = r;
  }
}

}  // namespace

// add_all's loop for normal jitter on a GPU op, with the fault check, the
// compute sum and the range's low end compiled in or out (a rank no fault
// names skips fault_factor either way, so the results are the same). The
// index is a size_t and the range's rank is set once at the end: the loop is
// the run's hottest, and a 32-bit index costs it a sign extension per access.
template <bool kFaults, int kCompute, bool kLow>
ComputeTime::ClockRange ComputeTime::add_normal(int64_t step, uint32_t op_index, int64_t* clock,
                                                int64_t* compute) const {
  const double base = static_cast<double>(plan_.ops[op_index].time.ns), cv = samplers_[op_index].cv;
  const uint64_t counter = static_cast<uint64_t>(step) * plan_.ops.size() + op_index;
  const uint64_t* stream = gpu_stream_.data();
  const uint8_t* slow = has_straggler_.data();
  const auto n = static_cast<size_t>(plan_.ranks);
  ClockRange range;
  size_t hi_rank = 0;
  for (size_t r = 0; r < n; ++r) {
    double t = base * std::max(0.0, 1.0 + cv * draw_normal(stream[r], counter));
    if constexpr (kFaults)
      if (slow[r]) t = fault_factor(static_cast<int>(r), step, op_index, t);
    put<kCompute, kLow>(clock, compute, r, to_ns(t), &range, &hi_rank);
  }
  if (n > 0) range.hi_rank = static_cast<int>(hi_rank);
  return range;
}

// Any other op: sample_ns rank by rank (found once for a GPU op without jitter or faults).
template <int kCompute>
ComputeTime::ClockRange ComputeTime::add_sampled(int64_t step, uint32_t op_index, int64_t* clock,
                                                 int64_t* compute) const {
  ClockRange range;
  size_t hi_rank = 0;
  const auto n = static_cast<size_t>(plan_.ranks);
  int64_t d = 0;
  if (same_for_all(op_index, &d)) {
    for (size_t r = 0; r < n; ++r) put<kCompute>(clock, compute, r, d, &range, &hi_rank);
  } else {
    for (size_t r = 0; r < n; ++r)
      put<kCompute>(clock, compute, r, sample_ns(static_cast<int>(r), step, op_index), &range, &hi_rank);
  }
  if (n > 0) range.hi_rank = static_cast<int>(hi_rank);
  return range;
}

void ComputeTime::add_all(int64_t step, uint32_t op_index, int64_t* clock, int64_t* compute, Sum sum,
                          ClockRange* range, Span span) const {
  const PlanOp& op = plan_.ops[op_index];
  const JitterSampler& js = samplers_[op_index];
  const int mode = compute == nullptr ? 0 : sum == Sum::kAdd ? 1 : 2;
  ClockRange r;
  // The common case, normal jitter on a GPU op, inlined: the same expression
  // as JitterSampler::draw, so the same doubles.
  if (op.kind != OpKind::kCompute || !js.active || js.dist != JitterDist::kNormal) {
    r = mode == 0 ? add_sampled<0>(step, op_index, clock, compute)
        : mode == 1 ? add_sampled<1>(step, op_index, clock, compute)
                    : add_sampled<2>(step, op_index, clock, compute);
    if (span == Span::kHigh) r.lo = INT64_MAX;  // found anyway here, off the hot path
  } else {
    // Table of the 12 loops: [faults][compute mode][low end kept].
    using Loop = ClockRange (ComputeTime::*)(int64_t, uint32_t, int64_t*, int64_t*) const;
    static constexpr Loop kLoops[2][3][2] = {
        {{&ComputeTime::add_normal<false, 0, false>, &ComputeTime::add_normal<false, 0, true>},
         {&ComputeTime::add_normal<false, 1, false>, &ComputeTime::add_normal<false, 1, true>},
         {&ComputeTime::add_normal<false, 2, false>, &ComputeTime::add_normal<false, 2, true>}},
        {{&ComputeTime::add_normal<true, 0, false>, &ComputeTime::add_normal<true, 0, true>},
         {&ComputeTime::add_normal<true, 1, false>, &ComputeTime::add_normal<true, 1, true>},
         {&ComputeTime::add_normal<true, 2, false>, &ComputeTime::add_normal<true, 2, true>}}};
    const bool low = range != nullptr && span == Span::kFull;
    r = (this->*kLoops[plan_.stragglers.empty() ? 0 : 1][mode][low ? 1 : 0])(step, op_index, clock, compute);
  }
  if (range) *range = r;
}

// Applies every compute-time fault naming `rank` at `step` to a GPU op of time t.
double ComputeTime::fault_factor(int rank, int64_t step, uint32_t op_index, double t) const {
  const auto nf = static_cast<uint64_t>(plan_.stragglers.size());
  double extra = 0;
  for (uint64_t fi = 0; fi < nf; ++fi) {
    const Fault& f = plan_.stragglers[fi];
    if (step < f.from_step || step > f.to_step || !names_rank(f, rank)) continue;
    switch (f.mode) {
      case SlowMode::kPersistent:
        t *= f.slowdown;
        break;
      case SlowMode::kIntermittent: {
        const uint64_t s = stream_seed(plan_.scenario.job.seed, static_cast<uint64_t>(rank), Stream::kIntermittent);
        const uint64_t k = static_cast<uint64_t>(step) * nf + fi;  // uniforms 8k (hit), 8k+2.. (slowdown)
        if (draw_uniform(s, k << 3) >= f.probability) break;
        const JitterSampler js = JitterSampler::make(f.slowdown_jitter);
        t *= f.slowdown * (js.active ? js.draw(s, 0, (k << 2) | 1) : 1.0);
        break;
      }
      case SlowMode::kPause: {
        if (op_index != pause_op_) break;
        const int64_t phase = f.staggered ? rank % f.every : 0;
        if ((step + phase) % f.every == 0) extra += static_cast<double>(f.pause.ns);
        break;
      }
      case SlowMode::kThrottle: {
        double factor = 1.0;
        for (const ThrottleStage& st : f.schedule)
          if (st.from_step <= step) factor = st.factor;
        t *= factor;
        break;
      }
    }
  }
  return t + extra;
}

Plan jitter_free(const Plan& plan) {
  Plan p = plan;
  for (PlanOp& op : p.ops) op.jitter_cv = 0;
  struct Clear {
    static void ops(std::vector<Op>& v) {
      for (Op& op : v) {
        op.jitter = Jitter{};
        ops(op.then_ops);
        ops(op.else_ops);
      }
    }
  };
  Clear::ops(p.scenario.step);
  p.scenario.faults.clear();
  p.step_faults.clear();
  p.op_faults.clear();
  p.stragglers.clear();
  p.absent_ranks.clear();
  p.link_faults.clear();
  p.nic_faults.clear();
  return p;
}

}  // namespace fleetsim
