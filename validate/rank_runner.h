// One process executing its rank of a compiled Plan for real: compute and
// collectives through a Transport (MPI on CPUs: validate/mpi_transport.h; NCCL
// on GPUs: validate/nccl/nccl_transport.h), CPU ops as sleeps, and faults for
// real. A watchdog thread with PyTorch's semantics times out collectives (and
// reacts to the transport's asynchronous errors), writes the flight recorder,
// aborts the transport and the process; the same observers as the simulator
// format what it writes. Library-free: every backend shares this code.
#pragma once

#include <array>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include "fleetsim/plan.h"
#include "sim/model/compute_time.h"
#include "sim/observe/flight_recorder.h"
#include "sim/observe/job_log.h"
#include "validate/transport.h"

namespace fleetsim::validate {

struct RunnerOptions {
  std::string work_dir;         // the RunRecord folder being written (fr/, parts/)
  // Issue the collective at this (step, op index) as a wait that never ends
  // (the NCCL backend's spin demonstration: a peer that never arrives). -1 = off.
  int64_t spin_step = -1;
};

// A JobLog writing into memory, so each line it formats can be forwarded with
// its time into this rank's part file.
class LogCapture {
 public:
  explicit LogCapture(const Plan& plan);
  ~LogCapture();
  JobLog& log() { return *log_; }
  // Lines JobLog wrote since the last call.
  std::vector<std::string> take();

 private:
  char* buf_ = nullptr;
  size_t len_ = 0, consumed_ = 0;
  std::FILE* f_ = nullptr;
  std::unique_ptr<JobLog> log_;
};

class RankRunner {
 public:
  // `transport` must outlive the runner.
  RankRunner(const Plan& plan, const RunnerOptions& opt, int rank, Transport& transport);
  ~RankRunner();
  // Runs every step. Returns the process exit code (0 when every step finished);
  // a watchdog abort, a crash fault or SIGTERM end the process from inside.
  int run();

 private:
  bool begin_step(int64_t step);
  bool interpret(int64_t step);
  void issue_op(int64_t step, uint32_t op_index);
  void issue_work(int64_t step, uint32_t op_index, const Fault* fault);
  const Fault* op_fault(int64_t step, uint32_t op_index) const;
  void enter_state(int state);
  void leave_state();
  [[noreturn]] void stall_forever();

  void watchdog_loop();
  void fire_timeout(int64_t now);
  void fire_async_error(int64_t now, const std::string& what);
  void dump_locked(int64_t now);
  void abort_transport_bounded();  // REQUIRES: mu_ held
  void sample_telemetry(int64_t t, int64_t period_ns);
  void part(const std::string& line);  // REQUIRES: mu_ held
  void flush_log_locked(int64_t t);
  int64_t now_ns() const;

  const Plan& plan_;
  RunnerOptions opt_;
  int rank_;
  ComputeTime compute_;
  Transport& transport_;
  int64_t t0_ns_ = 0;  // steady_clock at the common start

  std::mutex mu_;      // guards everything below that the watchdog thread touches
  FlightRecorder fr_;
  LogCapture log_;
  std::FILE* part_ = nullptr;
  std::FILE* tel_ = nullptr;
  WorkRecord inflight_;
  bool has_inflight_ = false, dumped_ = false, spin_issued_ = false;
  int64_t abort_at_ = -1;
  uint32_t next_record_ = 0;
  std::array<uint32_t, kGroupKinds> coll_seq_{}, p2p_seq_{}, op_seq_{};

  std::atomic<int64_t> step_{1};
  std::atomic<int> state_{0};  // 0 idle, 1 compute, 2 collective
  std::atomic<int64_t> state_since_{0}, busy_ns_{0}, compute_ns_{0}, nic_bytes_{0};
  std::atomic<bool> stop_{false};
  int64_t last_demand_ = 0, last_cpu_ = 0, last_busy_ = 0, last_compute_ = 0;  // watchdog thread only
  int64_t last_sample_ns_ = 0;  // when the previous telemetry sample was taken (watchdog thread only)
  bool device_telemetry_ = true;  // false once the transport had no device sample
  std::thread watchdog_;
};

// Set by the SIGTERM handler; the watchdog thread dumps and exits on it.
extern std::atomic<bool> g_terminate;

}  // namespace fleetsim::validate
