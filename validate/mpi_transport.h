// The MPI backend of the runner: compute as a CPU spin, collectives moved over
// fixed-size slots on per-group communicators as NCCL moves them (mpi_ops.h),
// polled with MPI_Test (a spin, as an NCCL kernel spins), the store barrier as
// MPI_Ibarrier.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>

#include "fleetsim/plan.h"
#include "validate/mpi_ops.h"
#include "validate/runner_common.h"
#include "validate/transport.h"

namespace fleetsim::validate {

class MpiTransport final : public Transport {
 public:
  // One communicator per group kind: MPI_Comm_split(world, color = instance, key = index).
  MpiTransport(const Plan& plan, int rank, bool yield);
  const char* name() const override { return "mpi"; }
  void world_barrier() override;
  void store_barrier() override;
  void compute(int64_t ns) override;
  bool collective(const WorkSpec& w) override;
  void spin_on_missing_peer() override;  // a CPU spin on a flag nobody sets
  void abort() override { aborted_ = true; }

 private:
  bool yield_;
  std::atomic<bool> aborted_{false};
  Buffers buffers_;
  std::array<MPI_Comm, kGroupKinds> comms_{};
  std::array<int64_t, kGroupKinds> seq_{};  // collectives issued per group: the messages' tags
  MPI_Comm p2p_comm_ = MPI_COMM_NULL, store_comm_ = MPI_COMM_NULL;
};

}  // namespace fleetsim::validate
