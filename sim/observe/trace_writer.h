// trace.json: Chrome trace-event format (opens in Perfetto). One process per
// traced rank with a "cpu" and a "gpu" thread: compute kernels, CPU work, and
// collectives with their spin-wait shown as a nested "wait for peers" slice.
// Events stream to disk as they finish; collectives still open at the end are
// closed at the end of the run and marked "(never completed)"; CPU work a rank
// never returned from (a stall) is closed the same way, "(never returned)".
// Ranks not traced in full are tallied (compute, collective and wait time, last
// step, timeouts) and written at the end as one summary process: a slice per
// range of contiguous ranks with min/mean/max, the first timeout among them, and
// their faults (at most kTraceSummaryFaults), so the file stays bounded.
#pragma once

#include <cstdio>
#include <vector>

#include "fleetsim/observer.h"

namespace fleetsim {

inline constexpr int kTraceSummaryBins = 64, kTraceSummaryFaults = 64;

class TraceWriter final : public Observer {
 public:
  // `ranks`: the ranks traced in full; the others are summarized.
  TraceWriter(const Plan& plan, std::vector<int> ranks, std::FILE* out);

  void on_compute(int rank, uint32_t op, int64_t step, SimTime begin, SimTime end, bool cpu) override;
  void on_work_started(const WorkRecord& w) override;
  void on_transfer(const WorkRecord& w, SimTime begin, SimTime end, int64_t nic_bytes) override;
  void on_work_completed(const WorkRecord& w) override;
  void on_fault(int rank, SimTime t, const Fault& f) override;
  void on_timeout(const WorkRecord& w, SimTime t) override;
  void on_end(SimTime t, Outcome o) override;

 private:
  struct Open {
    bool active = false;
    WorkRecord work;
    SimTime transfer_begin = SimTime::never();
  };
  void slice(int rank, int tid, const std::string& name, SimTime begin, SimTime end,
             const std::string& args);
  void instant(int rank, int tid, const std::string& name, SimTime t);
  void close_work(const WorkRecord& w, SimTime end, bool completed);
  bool traced(int rank) const { return slot_[static_cast<size_t>(rank)] >= 0; }
  void write_summary(SimTime end);

  // What an untraced rank did, in total.
  struct Tally {
    int64_t compute_ns = 0, collective_ns = 0, wait_ns = 0, last_step = 0;
    SimTime started = SimTime::never(), transfer = SimTime::never();
    bool open = false, timed_out = false;
  };

  const Plan& plan_;
  std::FILE* out_;
  std::vector<int32_t> slot_;
  std::vector<Open> open_;
  std::vector<std::pair<int, std::pair<SimTime, std::string>>> stuck_cpu_;  // (rank, (since, what)) never returned
  bool first_ = true;
  std::vector<Tally> tally_;  // by rank when some ranks are summarized, else empty
  int first_timeout_rank_ = -1, summary_faults_ = 0;
  SimTime first_timeout_at_{};
};

}  // namespace fleetsim
