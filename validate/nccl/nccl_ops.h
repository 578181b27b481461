// Collectives as NCCL calls on device buffers, with nccl-tests' meaning of the
// size S: reductions on floats (count = S / 4), gathers, scatters, broadcasts
// and point-to-point on bytes; all-to-all as grouped ncclSend/ncclRecv to
// every member. Shared by the plan runner's transport and the calibration sweep.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <string>

#include "fleetsim/scenario.h"
#include "validate/nccl/gpu_status.h"

namespace fleetsim::validate {

// Send and receive buffers on the current device, zeroed, large enough for
// S = max_bytes on groups up to `ranks` members. On failure ok() is false and
// why() is the failed call's message.
class DeviceBuffers {
 public:
  DeviceBuffers(int64_t max_bytes, int ranks);
  ~DeviceBuffers();
  DeviceBuffers(const DeviceBuffers&) = delete;
  DeviceBuffers& operator=(const DeviceBuffers&) = delete;
  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }
  void* send() { return send_; }
  void* recv() { return recv_; }

 private:
  void* send_ = nullptr;
  void* recv_ = nullptr;
  std::string why_;
};

// Enqueues op `kind` moving S = `bytes` on `comm` (`n` members, `root` a member
// index); send/recv go to/from `peer` (a rank of `comm`). kBarrier is a
// one-float all-reduce, as ProcessGroupNCCL's barrier. The status is the first
// NCCL call's that failed (an unknown kind fails as ncclInvalidArgument).
GpuStatus post_nccl(OpKind kind, int64_t bytes, ncclComm_t comm, int n, int root, int peer, DeviceBuffers& buf,
                    cudaStream_t stream);

// "NCCL error: <ncclGetErrorString> (<code>)", for a result NCCL reports
// about earlier work (ncclCommGetAsyncError), not a call's own status.
std::string nccl_error(ncclResult_t r);

}  // namespace fleetsim::validate
