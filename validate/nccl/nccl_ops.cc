// The mapping of fleetsim's ops onto NCCL calls (see nccl_ops.h).
#include "validate/nccl/nccl_ops.h"

#include <algorithm>

#include "validate/nccl/gpu_check.h"

namespace fleetsim::validate {

namespace {
size_t count_of(int64_t bytes, int64_t unit) { return static_cast<size_t>(std::max<int64_t>(1, bytes / unit)); }

// All-to-all as grouped send/recv pairs with every member, as PyTorch posts it.
GpuStatus post_all_to_all(void* s, void* r, size_t chunk, ncclComm_t comm, int n, cudaStream_t stream) {
  if (GpuStatus st = FLEETSIM_NCCL(ncclGroupStart()); !st.ok()) return st;
  for (int p = 0; p < n; ++p) {
    const size_t at = static_cast<size_t>(p) * chunk;
    GpuStatus st = FLEETSIM_NCCL(ncclSend(static_cast<char*>(s) + at, chunk, ncclInt8, p, comm, stream));
    if (st.ok()) st = FLEETSIM_NCCL(ncclRecv(static_cast<char*>(r) + at, chunk, ncclInt8, p, comm, stream));
    if (!st.ok()) {
      FLEETSIM_NCCL(ncclGroupEnd()).warn();  // close the group; the first failure is what the caller sees
      return st;
    }
  }
  return FLEETSIM_NCCL(ncclGroupEnd());
}
}  // namespace

DeviceBuffers::DeviceBuffers(int64_t max_bytes, int ranks) {
  const auto bytes = static_cast<size_t>(max_bytes + 64 * std::max(ranks, 1) + 256);
  for (void** p : {&send_, &recv_}) {
    if (GpuStatus s = FLEETSIM_CUDA(cudaMalloc(p, bytes)); !s.ok()) {
      *p = nullptr;
      if (why_.empty()) why_ = s.message();
    } else if (GpuStatus z = FLEETSIM_CUDA(cudaMemset(*p, 0, bytes)); !z.ok() && why_.empty()) {
      why_ = z.message();
    }
  }
}

DeviceBuffers::~DeviceBuffers() {
  if (send_) FLEETSIM_CUDA(cudaFree(send_)).warn();
  if (recv_) FLEETSIM_CUDA(cudaFree(recv_)).warn();
}

GpuStatus post_nccl(OpKind kind, int64_t bytes, ncclComm_t comm, int n, int root, int peer, DeviceBuffers& buf,
                    cudaStream_t stream) {
  const int64_t per_rank = bytes / std::max(n, 1);
  void* s = buf.send();
  void* r = buf.recv();
  switch (kind) {
    case OpKind::kAllReduce:
      return FLEETSIM_NCCL(ncclAllReduce(s, r, count_of(bytes, 4), ncclFloat32, ncclSum, comm, stream));
    case OpKind::kBarrier:
      return FLEETSIM_NCCL(ncclAllReduce(s, r, 1, ncclFloat32, ncclSum, comm, stream));
    case OpKind::kAllGather:
      return FLEETSIM_NCCL(ncclAllGather(s, r, count_of(per_rank, 1), ncclInt8, comm, stream));
    case OpKind::kReduceScatter:
      return FLEETSIM_NCCL(ncclReduceScatter(s, r, count_of(per_rank, 4), ncclFloat32, ncclSum, comm, stream));
    case OpKind::kBroadcast:
      return FLEETSIM_NCCL(ncclBroadcast(s, r, count_of(bytes, 1), ncclInt8, root, comm, stream));
    case OpKind::kReduce:
      return FLEETSIM_NCCL(ncclReduce(s, r, count_of(bytes, 4), ncclFloat32, ncclSum, root, comm, stream));
    case OpKind::kAllToAll:
      return post_all_to_all(s, r, count_of(per_rank, 1), comm, n, stream);
    case OpKind::kSend:
      return FLEETSIM_NCCL(ncclSend(s, count_of(bytes, 1), ncclInt8, peer, comm, stream));
    case OpKind::kRecv:
      return FLEETSIM_NCCL(ncclRecv(r, count_of(bytes, 1), ncclInt8, peer, comm, stream));
    default:
      return FLEETSIM_NCCL(ncclInvalidArgument);  // not an op NCCL runs
  }
}

std::string nccl_error(ncclResult_t r) {
  return std::string("NCCL error: ") + ncclGetErrorString(r) + " (" + std::to_string(static_cast<int>(r)) + ")";
}

}  // namespace fleetsim::validate
