// Step aggregation: per step, the count of ranks done, the latest finish and
// who it was. Percentiles use the nearest-rank method on exact nanoseconds.
#include "sim/observe/step_table.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>

#include "fleetsim/record.h"

namespace fleetsim {

StepTable::StepTable(const Plan& plan, std::FILE* out)
    : plan_(plan), out_(out) {
  if (out_) std::fputs(csv_header(columns::kSteps).c_str(), out_);
}

void StepTable::on_work_started(const WorkRecord& w) {
  if (w.step < 1 || w.step > plan_.scenario.job.steps) return;
  Agg& a = at(w.step);
  const int64_t t = w.started.ns;
  if (a.last_arrival < 0 || t > a.arrival_ns || (t == a.arrival_ns && w.rank < a.last_arrival)) {
    a.arrival_ns = t;
    a.last_arrival = w.rank;
  }
}

StepTable::Agg& StepTable::at(int64_t step) {
  const auto i = static_cast<size_t>(step);
  if (i >= agg_.size()) agg_.resize(i + 1);
  return agg_[i];
}

void StepTable::on_step_end(int rank, int64_t step, SimTime t) {
  Agg& a = at(step);
  if (a.slowest < 0 || t.ns > a.end_ns || (t.ns == a.end_ns && rank < a.slowest)) {
    a.end_ns = t.ns;
    a.slowest = rank;
  }
  if (++a.count < plan_.ranks) return;
  finish(step, a);
}

// A whole step at once (the lockstep executor): the latest end's lowest rank
// is the slowest, as on_step_end would find it rank by rank. A step already
// partly counted goes rank by rank.
void StepTable::on_step_end_all(const StepEnds& e) {
  Agg& a = at(e.step);
  if (a.count != 0 || e.end_ns.size() != static_cast<size_t>(plan_.ranks) || e.latest_rank < 0) {
    Observer::on_step_end_all(e);
    return;
  }
  a.end_ns = e.latest_ns;
  a.slowest = e.latest_rank;
  a.count = plan_.ranks;
  finish(e.step, a);
}

void StepTable::finish(int64_t step, const Agg& a) {
  const int64_t dur = a.end_ns - prev_end_;
  durations_.push_back(dur);
  if (out_)
    std::fprintf(out_, "%" PRId64 ",%s,%s,%s,%d\n", step, format_seconds(prev_end_).c_str(),
                 format_seconds(a.end_ns).c_str(), format_seconds(dur).c_str(), a.last_arrival >= 0 ? a.last_arrival : a.slowest);
  prev_end_ = a.end_ns;
}

void StepTable::on_end(SimTime, Outcome) {
  if (out_) std::fflush(out_);
}

StepStats StepTable::stats() const {
  StepStats s;
  s.count = static_cast<int64_t>(durations_.size());
  if (durations_.empty()) return s;
  std::vector<int64_t> sorted = durations_;
  std::sort(sorted.begin(), sorted.end());
  long double sum = 0;
  for (int64_t d : sorted) sum += static_cast<long double>(d);
  auto pct = [&](double p) {
    const auto k = static_cast<size_t>(std::max(1.0, std::ceil(p * static_cast<double>(sorted.size()))));
    return static_cast<double>(sorted[k - 1]) * 1e-9;
  };
  s.mean_s = static_cast<double>(sum / static_cast<long double>(sorted.size())) * 1e-9;
  s.p50_s = pct(0.50);
  s.p99_s = pct(0.99);
  s.max_s = static_cast<double>(sorted.back()) * 1e-9;
  return s;
}

}  // namespace fleetsim
