// job.log: what the job would print, in simulated time order: `log` ops, the
// watchdog's timeout lines in ProcessGroupNCCL's wording, dump-signal lines on
// the other ranks, and torchrun's lines when a rank dies. Lines stream to disk.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "fleetsim/observer.h"

namespace fleetsim {

// "E0101 00:13:07.900000000": glog's severity, date and time for simulated time
// t, with the job starting at 01-01 00:00:00.
std::string glog_stamp(char severity, SimTime t);

class JobLog final : public Observer {
 public:
  JobLog(const Plan& plan, std::FILE* out);

  void on_work_enqueued(const WorkRecord& w) override;
  void on_work_completed(const WorkRecord& w) override;
  void on_log(int rank, SimTime t, std::string_view line) override;
  void on_timeout(const WorkRecord& w, SimTime t) override;
  void on_fault(int rank, SimTime t, const Fault& f) override;
  void on_backend_failure(int rank, SimTime t, BackendFailure f, const WorkRecord& w, int64_t incoming,
                          int64_t expected) override;
  void on_end(SimTime t, Outcome o) override;

 private:
  void line(int rank, const std::string& text);
  void gloo_timeout(const WorkRecord& w);
  bool gloo() const { return plan_.scenario.job.backend == CommBackend::kGloo; }
  int64_t& last_enqueued(int rank, GroupKind g) { return last_enq_[idx(rank, g)]; }
  int64_t& last_completed(int rank, GroupKind g) { return last_done_[idx(rank, g)]; }
  static size_t idx(int rank, GroupKind g) {
    return static_cast<size_t>(rank) * kGroupKinds + static_cast<size_t>(g);
  }

  const Plan& plan_;
  std::FILE* out_;
  std::vector<int64_t> last_enq_, last_done_;
  int crashed_rank_ = -1;
  bool nic_error_ = false;  // the first process to die did so on an NCCL network error
  bool aborted_ = false;    // the first process to die did so on SIGABRT (gloo's EnforceNotMet)
  int timed_out_rank_ = -1; // gloo: the first rank whose op timed out (its process exits 1)
};

}  // namespace fleetsim
