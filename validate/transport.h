// What a real rank needs from its collective library, so that one RankRunner
// (the plan walk, the watchdog, the flight recorder, telemetry and job.log)
// drives every backend: MPI processes on CPUs (validate/mpi_transport.h) and
// NCCL on GPUs (validate/nccl/nccl_transport.h). The runner calls every method
// from its main thread, except those marked "watchdog thread".
#pragma once

#include <cstdint>
#include <string>

#include "fleetsim/plan.h"  // GroupKind
#include "fleetsim/scenario.h"

namespace fleetsim::validate {

// One collective or p2p op as the runner issues it.
struct WorkSpec {
  OpKind kind = OpKind::kAllReduce;
  GroupKind group = GroupKind::kWorld;
  int64_t bytes = 0;        // nccl-tests' S
  int members = 1;          // of the group
  int root = 0;             // a member index (broadcast, reduce)
  int peer = -1;            // world rank of a send/recv peer
  int tag = 0;              // 1: towards higher stages, 2: towards lower
};

// A device-side telemetry sample (NVML). Fields < 0 were not available.
struct DeviceSample {
  double util_gpu_pct = -1;     // nvidia-smi's utilization.gpu
  double sm_clock_mhz = -1;
  double power_w = -1;
  double pcie_tx_kBps = -1, pcie_rx_kBps = -1;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;  // "mpi", "nccl"

  // Every rank of the job arrives (the common start).
  virtual void world_barrier() = 0;
  // A CPU-side barrier of the whole job (a TCPStore barrier in PyTorch).
  virtual void store_barrier() = 0;
  // Busy work standing in for a kernel of `ns`; returns when it has finished.
  virtual void compute(int64_t ns) = 0;
  // Posts `w` and waits until it completes: true. False when the library
  // reports an error; the caller then stalls as a rank whose NCCL never
  // finishes would (the watchdog ends the process).
  virtual bool collective(const WorkSpec& w) = 0;
  // The spin demonstration: a wait for a peer that never arrives, busy all the
  // time (on a GPU a kernel polling a flag in device memory that no peer sets,
  // as an NCCL kernel polls its peers' flags). Returns only after abort().
  virtual void spin_on_missing_peer() = 0;

  // Watchdog thread, every poll: a communicator's asynchronous error as one
  // line ("" = none), as ProcessGroupNCCL checks ncclCommGetAsyncError.
  virtual std::string async_error() { return ""; }
  // Watchdog thread, just before the process takes itself down: abort the
  // communicators (ncclCommAbort) so no kernel is left spinning. Must return.
  virtual void abort() {}
  // Watchdog thread, every telemetry period: the device's own counters. False
  // when there are none (the runner's own busy accounting is used instead).
  virtual bool sample_device(DeviceSample* /*out*/) { return false; }
};

}  // namespace fleetsim::validate
