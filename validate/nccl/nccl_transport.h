// The NCCL backend of the runner: one process per GPU, MPI only to hand out the
// ncclUniqueId and for the CPU-side barriers. Compute is a busy kernel for the
// sampled duration, collectives are NCCL calls on communicators split per
// process group (ncclCommSplit: color = the group instance, key = the index),
// each followed by an event that the main thread polls (cudaEventQuery) until
// it completes. The watchdog thread polls ncclCommGetAsyncError and the event,
// aborts every communicator (ncclCommAbort) before the process goes, and reads
// the driver's utilization through NVML.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <array>
#include <atomic>
#include <memory>
#include <string>

#include "fleetsim/plan.h"
#include "validate/nccl/device.h"
#include "validate/nccl/gpu_status.h"
#include "validate/nccl/nccl_ops.h"
#include "validate/nccl/nvml.h"
#include "validate/transport.h"

namespace fleetsim::validate {

class NcclTransport final : public Transport {
 public:
  // Collective over MPI_COMM_WORLD: every rank builds the same communicators.
  // On failure ok() is false and why() says what went wrong.
  NcclTransport(const Plan& plan, int rank, int device);
  ~NcclTransport() override;
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }

  const char* name() const override { return "nccl"; }
  void world_barrier() override;
  void store_barrier() override;
  void compute(int64_t ns) override;
  bool collective(const WorkSpec& w) override;
  void spin_on_missing_peer() override;
  std::string async_error() override;
  void abort() override;
  bool sample_device(DeviceSample* out) override;

 private:
  bool wait_event();  // polls the completion event until done, an error or an abort
  // Construction: the stream, event, buffers and spin flags (and, where id is
  // given, rank 0's ncclUniqueId); then the world communicator and its splits.
  void setup_device(ncclUniqueId* id);
  bool setup_comms(const ncclUniqueId& id);
  void fail(const std::string& why);      // keeps the first why
  bool need(const GpuStatus& s);          // a setup call: its failure becomes why(); returns ok()
  bool report(const GpuStatus& s) const;  // "[rank r] error: ..." on stderr when failed; returns ok()

  const Plan& plan_;
  int rank_, device_;
  std::string prefix_;  // "[rank r] ", before every line this rank writes
  bool ok_ = false;
  std::string why_;
  int sms_ = 1;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;
  std::unique_ptr<DeviceBuffers> buffers_;
  ncclComm_t world_ = nullptr;
  std::array<ncclComm_t, kGroupKinds> comms_{};
  MPI_Comm store_comm_ = MPI_COMM_NULL;
  int* peer_flag_ = nullptr;            // device memory nobody writes (the spin demonstration)
  volatile int* abort_host_ = nullptr;  // mapped host memory the spinning kernel polls
  int* abort_dev_ = nullptr;
  std::atomic<bool> aborted_{false}, in_flight_{false};
  std::unique_ptr<Nvml> nvml_;
  std::string nvml_error_;  // the last NVML sampling error reported (watchdog thread only)
};

}  // namespace fleetsim::validate
