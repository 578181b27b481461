// The simulator's executor: per-rank CPU and GPU state machines over the event
// queue. Private to sim/; the public entry point is run_simulation() in
// fleetsim/engine.h. Per-rank state is stored by field (one vector per field)
// and sized once in the constructor; the event loop allocates only when a
// run-time input error or a log line has to be formatted.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fleetsim/engine.h"
#include "sim/core/event_queue.h"
#include "sim/model/compute_time.h"

namespace fleetsim {

class FleetSim {
 public:
  FleetSim(const Plan& plan, const CostModel& cost, const std::vector<Observer*>& observers);
  RunResult run();

 private:
  enum class CpuState : uint8_t { kReady, kBusy, kBlockedQueue, kBlockedSync, kBlockedStore, kStalled, kDone, kCrashed };
  enum class ItemKind : uint8_t { kCompute, kCollective, kP2p, kStepMarker };
  enum EventKind : uint8_t { kCpuWake = 1, kGpuDone, kCollDone, kP2pDone, kTick, kWatchdog, kDumpAll, kAbort, kNicError };

  // One entry of a rank's GPU launch queue.
  struct GpuItem {
    ItemKind kind = ItemKind::kCompute;
    int64_t step = 0;
    int64_t dur_ns = 0;   // kCompute
    SimTime begun{};      // when the GPU started it
    WorkRecord work;      // kCollective, kP2p
  };
  // Matching state of one group instance: at most one collective is pending per
  // instance, since a member's GPU cannot pass a collective that has not completed.
  struct Slot {
    int32_t arrived = 0;
    int64_t last_arrival = 0;
    OpKind kind = OpKind::kAllReduce;
    int64_t bytes = 0;
    DType dtype = DType::kFloat;
    int32_t root = 0;
    bool mismatch = false;
  };
  // One direction of a pipeline pair (sender, +1 or -1).
  struct P2pSlot {
    bool send_arrived = false, recv_arrived = false;
    int64_t send_bytes = 0, recv_bytes = 0;
    int64_t last_arrival = 0;
  };

  // Event loop pieces.
  void schedule(int64_t t, Priority p, EventKind k, uint32_t a = 0, uint32_t b = 0, uint32_t c = 0);
  void dispatch(const Event& e);
  void advance(int r);
  bool gpu_progress(int r);
  bool cpu_progress(int r);
  bool interpret(int r);
  bool issue_op(int r, uint32_t op_index);
  bool issue_work(int r, uint32_t op_index);
  void end_step(int r);
  void begin_step(int r);
  void finish_step(int r, int64_t step);
  void arrive(int r, GpuItem& item);
  void arrive_p2p(int r, GpuItem& item);
  void complete_collective(GroupKind g, int instance);
  void complete_p2p(uint32_t slot);
  void pop_head_work(int r);
  void watchdog_check();
  void arm_watchdog(SimTime deadline);
  void fire_timeout(int r, GpuItem& item);
  void crash(int r, const Fault& f);
  // nic_down: the index of a NIC fault whose NIC is down and which traffic among
  // `ranks` crosses, or -1; stall_on_dead_nic keeps those ranks spinning with no
  // bytes moving and schedules the IB error (once per NIC).
  int dead_nic(const std::vector<int>& ranks) const;
  void stall_on_dead_nic(int k, const std::vector<int>& ranks, GroupKind g);
  void nic_error(int k);
  void runtime_error(uint32_t op_or_source, bool is_source, const std::string& what);
  void set_gpu(int r, GpuState s, int64_t step);

  // Queue helpers.
  GpuItem& head(int r) { return queue_[static_cast<size_t>(r) * qcap_ + qhead_[r]]; }
  bool queue_full(int r) const { return qlen_[r] >= qcap_; }
  GpuItem& push_item(int r);
  void pop_item(int r);

  void store_barrier_arrive(int r);
  const Fault* op_fault(int r, uint32_t op_index) const;
  int64_t stuck_step(int r);

  const Plan& plan_;
  const CostModel& cost_;
  std::vector<Observer*> obs_;
  EventQueue q_;
  SimTime now_{};
  int n_ = 0;
  uint32_t qcap_ = 0;
  int64_t live_ = 0;  // pending events that are not observation ticks
  bool stop_ = false;
  RunResult result_;

  // Per-rank state, by field.
  std::vector<CpuState> cpu_;
  std::vector<uint32_t> pc_;
  std::vector<int64_t> step_;
  std::vector<int64_t> finished_step_;
  std::vector<uint8_t> gpu_busy_;
  std::vector<uint32_t> gpu_gen_;        // invalidates a crashed rank's pending GpuDone
  std::vector<uint32_t> qhead_, qlen_;
  std::vector<GpuItem> queue_;           // n_ * qcap_ ring buffers
  std::vector<uint32_t> next_record_;
  std::vector<uint32_t> coll_seq_, p2p_seq_, op_seq_;  // n_ * kGroupKinds
  std::vector<uint8_t> has_op_fault_, dumped_;
  std::array<std::vector<Slot>, kGroupKinds> slots_;
  std::vector<P2pSlot> p2p_;             // n_ * 2
  int ranks_done_ = 0;
  int store_arrived_ = 0;      // ranks waiting in the current store barrier
  // Degraded links per group instance: index into degraded_ (-1 = healthy).
  std::array<std::vector<int32_t>, kGroupKinds> degraded_index_;
  std::vector<std::vector<LinkDegradation>> degraded_;
  // Per-member arrival times (ns) per group instance, instance-major, kept only
  // for cost models that time collectives from every member's arrival
  // (CostModel::wants_arrivals, job.collective_model: steps).
  bool want_arrivals_ = false;
  std::array<std::vector<int64_t>, kGroupKinds> arrivals_;
  ComputeTime compute_time_;

  // Watchdog.
  int64_t timeout_ns_ = -1;
  int64_t watchdog_at_ = -1;   // time of the pending check, -1 if none
  uint32_t watchdog_gen_ = 0;
  bool hung_ = false;

  // nic_down faults, by index into plan.nic_faults.
  std::vector<int64_t> nic_down_at_;     // when the NIC went down, -1 while up
  std::vector<uint8_t> nic_err_pending_; // the IB error is scheduled
  std::vector<GroupKind> nic_err_group_; // the group whose traffic hit it first
  std::vector<int> members_tmp_;         // scratch for the members of one group
};

}  // namespace fleetsim
