// The mapping of fleetsim's ops onto NCCL calls (see nccl_ops.h).
#include "validate/nccl/nccl_ops.h"

#include <algorithm>

namespace fleetsim::validate {

namespace {
size_t count_of(int64_t bytes, int64_t unit) { return static_cast<size_t>(std::max<int64_t>(1, bytes / unit)); }
}  // namespace

DeviceBuffers::DeviceBuffers(int64_t max_bytes, int ranks) {
  const auto bytes = static_cast<size_t>(max_bytes + 64 * std::max(ranks, 1) + 256);
  if (cudaMalloc(&send_, bytes) != cudaSuccess) send_ = nullptr;
  if (cudaMalloc(&recv_, bytes) != cudaSuccess) recv_ = nullptr;
  if (send_) cudaMemset(send_, 0, bytes);
  if (recv_) cudaMemset(recv_, 0, bytes);
}

DeviceBuffers::~DeviceBuffers() {
  if (send_) cudaFree(send_);
  if (recv_) cudaFree(recv_);
}

ncclResult_t post_nccl(OpKind kind, int64_t bytes, ncclComm_t comm, int n, int root, int peer, DeviceBuffers& buf,
                       cudaStream_t stream) {
  const int64_t per_rank = bytes / std::max(n, 1);
  void* s = buf.send();
  void* r = buf.recv();
  switch (kind) {
    case OpKind::kAllReduce:
      return ncclAllReduce(s, r, count_of(bytes, 4), ncclFloat32, ncclSum, comm, stream);
    case OpKind::kBarrier:
      return ncclAllReduce(s, r, 1, ncclFloat32, ncclSum, comm, stream);
    case OpKind::kAllGather:
      return ncclAllGather(s, r, count_of(per_rank, 1), ncclInt8, comm, stream);
    case OpKind::kReduceScatter:
      return ncclReduceScatter(s, r, count_of(per_rank, 4), ncclFloat32, ncclSum, comm, stream);
    case OpKind::kBroadcast:
      return ncclBroadcast(s, r, count_of(bytes, 1), ncclInt8, root, comm, stream);
    case OpKind::kReduce:
      return ncclReduce(s, r, count_of(bytes, 4), ncclFloat32, ncclSum, root, comm, stream);
    case OpKind::kAllToAll: {
      const size_t chunk = count_of(per_rank, 1);
      ncclResult_t rc = ncclGroupStart();
      if (rc != ncclSuccess) return rc;
      for (int p = 0; p < n && rc == ncclSuccess; ++p) {
        rc = ncclSend(static_cast<char*>(s) + static_cast<size_t>(p) * chunk, chunk, ncclInt8, p, comm, stream);
        if (rc == ncclSuccess)
          rc = ncclRecv(static_cast<char*>(r) + static_cast<size_t>(p) * chunk, chunk, ncclInt8, p, comm, stream);
      }
      const ncclResult_t end = ncclGroupEnd();
      return rc != ncclSuccess ? rc : end;
    }
    case OpKind::kSend:
      return ncclSend(s, count_of(bytes, 1), ncclInt8, peer, comm, stream);
    case OpKind::kRecv:
      return ncclRecv(r, count_of(bytes, 1), ncclInt8, peer, comm, stream);
    default:
      return ncclInvalidArgument;
  }
}

std::string nccl_error(ncclResult_t r) {
  return std::string("NCCL error: ") + ncclGetErrorString(r) + " (" + std::to_string(static_cast<int>(r)) + ")";
}

}  // namespace fleetsim::validate
