// Mapping of fleetsim ops onto MPI's nonblocking collectives. Reductions run on
// floats (count = S / 4); gathers, scatters and broadcasts move bytes.
#include "validate/mpi_ops.h"

#include <sched.h>

#include <algorithm>

namespace fleetsim::validate {

Buffers::Buffers(int64_t max_bytes, int ranks) {
  const auto floats = static_cast<size_t>(max_bytes / 4 + 16 * std::max(ranks, 1) + 16);
  send_.assign(floats, 1.0f);
  recv_.assign(floats, 0.0f);
}

namespace {
int count_of(int64_t bytes, int64_t unit) { return static_cast<int>(std::max<int64_t>(1, bytes / unit)); }
}  // namespace

int post_collective(OpKind kind, int64_t bytes, MPI_Comm comm, int n, int root, int peer, int tag,
                    Buffers& buf, MPI_Request* req) {
  const int64_t per_rank = bytes / std::max(n, 1);
  switch (kind) {
    case OpKind::kAllReduce:
      return MPI_Iallreduce(buf.send(), buf.recv(), count_of(bytes, 4), MPI_FLOAT, MPI_SUM, comm, req);
    case OpKind::kBarrier:  // ProcessGroupNCCL's barrier is a one-element all-reduce
      return MPI_Iallreduce(buf.send(), buf.recv(), 1, MPI_FLOAT, MPI_SUM, comm, req);
    case OpKind::kAllGather:
      return MPI_Iallgather(buf.send(), count_of(per_rank, 1), MPI_BYTE, buf.recv(), count_of(per_rank, 1),
                            MPI_BYTE, comm, req);
    case OpKind::kReduceScatter:
      return MPI_Ireduce_scatter_block(buf.send(), buf.recv(), count_of(per_rank, 4), MPI_FLOAT, MPI_SUM, comm,
                                       req);
    case OpKind::kBroadcast:
      return MPI_Ibcast(buf.send(), count_of(bytes, 1), MPI_BYTE, root, comm, req);
    case OpKind::kReduce:
      return MPI_Ireduce(buf.send(), buf.recv(), count_of(bytes, 4), MPI_FLOAT, MPI_SUM, root, comm, req);
    case OpKind::kAllToAll:
      return MPI_Ialltoall(buf.send(), count_of(per_rank, 1), MPI_BYTE, buf.recv(), count_of(per_rank, 1),
                           MPI_BYTE, comm, req);
    case OpKind::kSend:
      return MPI_Isend(buf.send(), count_of(bytes, 1), MPI_BYTE, peer, tag, comm, req);
    case OpKind::kRecv:
      return MPI_Irecv(buf.recv(), count_of(bytes, 1), MPI_BYTE, peer, tag, comm, req);
    default:
      return MPI_Ibarrier(comm, req);  // a CPU-side (store) barrier
  }
}

bool spin_wait(MPI_Request* req, bool yield) {
  for (;;) {
    int done = 0;
    if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (yield) sched_yield();
  }
}

}  // namespace fleetsim::validate
