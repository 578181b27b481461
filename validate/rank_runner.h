// One MPI process executing its rank of a compiled Plan for real: compute as
// busy work on the CPU until its sampled duration has passed, CPU ops as sleeps,
// collectives as nonblocking MPI collectives on per-group communicators, polled
// until done (a spin, as NCCL spins), and faults for real. A watchdog thread
// with PyTorch's semantics times out collectives, writes the flight recorder and
// aborts the process; the same observers as the simulator format what it writes.
#pragma once

#include <mpi.h>

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
#include "validate/mpi_ops.h"

namespace fleetsim::validate {

struct RunnerOptions {
  std::string work_dir;         // the RunRecord folder being written (fr/, parts/)
  bool yield = false;           // sched_yield while spinning (ranks oversubscribe the cores)
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
  RankRunner(const Plan& plan, const RunnerOptions& opt, int rank);
  ~RankRunner();
  // Runs every step. Returns the process exit code (0 when every step finished);
  // a watchdog abort, a crash fault or SIGTERM end the process from inside.
  int run();

 private:
  void setup_comms();
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
  void dump_locked(int64_t now);
  void sample_telemetry(int64_t t, int64_t period_ns);
  void part(const std::string& line);  // REQUIRES: mu_ held
  void flush_log_locked(int64_t t);
  int64_t now_ns() const;

  const Plan& plan_;
  RunnerOptions opt_;
  int rank_;
  ComputeTime compute_;
  Buffers buffers_;
  std::array<MPI_Comm, kGroupKinds> comms_{};
  MPI_Comm p2p_comm_ = MPI_COMM_NULL, store_comm_ = MPI_COMM_NULL;
  int64_t t0_ns_ = 0;  // steady_clock at the common start

  std::mutex mu_;      // guards everything below that the watchdog thread touches
  FlightRecorder fr_;
  LogCapture log_;
  std::FILE* part_ = nullptr;
  std::FILE* tel_ = nullptr;
  WorkRecord inflight_;
  bool has_inflight_ = false, dumped_ = false;
  int64_t abort_at_ = -1;
  uint32_t next_record_ = 0;
  std::array<uint32_t, kGroupKinds> coll_seq_{}, p2p_seq_{}, op_seq_{};

  std::atomic<int64_t> step_{1};
  std::atomic<int> state_{0};  // 0 idle, 1 compute, 2 collective
  std::atomic<int64_t> state_since_{0}, busy_ns_{0}, compute_ns_{0}, nic_bytes_{0};
  std::atomic<bool> stop_{false};
  int64_t last_demand_ = 0, last_cpu_ = 0, last_busy_ = 0, last_compute_ = 0;  // watchdog thread only
  std::thread watchdog_;
};

// Set by the SIGTERM handler; the watchdog thread dumps and exits on it.
extern std::atomic<bool> g_terminate;

}  // namespace fleetsim::validate
