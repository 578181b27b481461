// telemetry.csv: what nvidia-smi, DCGM and the NIC counters would show, sampled
// every job.telemetry_period for a chosen set of ranks. Each row covers the
// period ending at time_s. An NCCL kernel counts as busy whether it moves data
// or spins waiting for peers: that is why a hung job reads 100%. NIC and NVLink
// byte counters (as the NIC's port counters and DCGM's NVLink TX counter count)
// grow while data moves and stay flat while a kernel spins.
#pragma once

#include <cstdio>
#include <vector>

#include "fleetsim/observer.h"

namespace fleetsim {

// DCGM-style activity of each GPU state (fractions of the period).
struct ActivityModel {
  double compute_sm_active = 0.90;     // dense training kernels keep nearly every SM busy
  double compute_tensor_active = 0.50; // ~40-55% MFU-class work on the tensor pipe
  int nccl_channels = 16;              // CTAs an NCCL kernel occupies (one per channel)
};

class Telemetry final : public Observer {
 public:
  // `ranks`: which ranks to sample, ascending.
  Telemetry(const Plan& plan, std::vector<int> ranks, std::FILE* out, ActivityModel m = {});

  void on_gpu_state(int rank, SimTime t, GpuState s, int64_t step) override;
  void on_transfer(const WorkRecord& w, SimTime begin, SimTime end, int64_t nic_bytes) override;
  void on_fault(int rank, SimTime t, const Fault& f) override;
  void on_tick(SimTime t) override;
  void on_end(SimTime t, Outcome o) override;

 private:
  struct RankTrack {
    GpuState state = GpuState::kIdle;
    SimTime since{};
    double busy_ns = 0, sm_ns = 0, tensor_ns = 0;  // within the current period
    int64_t step = 0;                              // 0 until the GPU first works on a step
    int64_t nic_done = 0, nvl_done = 0;            // bytes of finished transfers (NIC, NVLink)
    SimTime xfer_begin{}, xfer_end{};
    int64_t xfer_bytes = 0, xfer_nvl_bytes = 0;
    bool dead = false;                             // its process died: no kernel runs from then on
  };
  void accrue(RankTrack& k, SimTime t) const;
  int64_t nvlink_bytes(const WorkRecord& w, int64_t nic_bytes) const;
  void emit(SimTime t, int64_t period_ns);

  const Plan& plan_;
  std::vector<int> ranks_;
  std::vector<int32_t> slot_;  // rank -> index into tracks_, -1 if not sampled
  std::vector<RankTrack> tracks_;
  std::FILE* out_;
  ActivityModel m_;
  double nccl_sm_ = 0;
  SimTime last_tick_{};
};

}  // namespace fleetsim
