// MpiTransport: the CPU stand-ins for a GPU's kernels and NCCL's collectives.
#include "validate/mpi_transport.h"

#include <sched.h>

#include <algorithm>
#include <chrono>

namespace fleetsim::validate {

namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

MpiTransport::MpiTransport(const Plan& plan, int rank, bool yield)
    : yield_(yield), buffers_(plan_max_bytes(plan), plan.ranks) {
  comms_.fill(MPI_COMM_NULL);
  for (int g = 0; g < kGroupKinds; ++g) {
    const auto kind = static_cast<GroupKind>(g);
    if (!plan.group_exists(kind)) continue;
    MPI_Comm_split(MPI_COMM_WORLD, plan.group_instance(kind, rank), plan.group_index(kind, rank),
                   &comms_[static_cast<size_t>(g)]);
    MPI_Comm_set_errhandler(comms_[static_cast<size_t>(g)], MPI_ERRORS_RETURN);
  }
  MPI_Comm_dup(MPI_COMM_WORLD, &p2p_comm_);
  MPI_Comm_dup(MPI_COMM_WORLD, &store_comm_);
  MPI_Comm_set_errhandler(p2p_comm_, MPI_ERRORS_RETURN);
}

void MpiTransport::world_barrier() { MPI_Barrier(MPI_COMM_WORLD); }

void MpiTransport::store_barrier() {
  MPI_Request req;
  MPI_Ibarrier(store_comm_, &req);
  spin_wait(&req, yield_);
}

void MpiTransport::compute(int64_t ns) {
  const int64_t deadline = steady_ns() + ns;
  while (steady_ns() < deadline)  // busy work: a CPU core stands in for the GPU
    if (yield_) sched_yield();    // oversubscribed: let a peer's MPI progress in
}

bool MpiTransport::collective(const WorkSpec& w) {
  const bool p2p = w.kind == OpKind::kSend || w.kind == OpKind::kRecv;
  const auto g = static_cast<size_t>(w.group);
  CollectiveCall c{w.kind, w.bytes, p2p ? p2p_comm_ : comms_[g], w.members, w.root, w.peer, w.tag, 0};
  if (!p2p) c.seq = seq_[g]++;
  return run_collective(c, buffers_, yield_);
}

void MpiTransport::spin_on_missing_peer() {
  while (!aborted_.load(std::memory_order_relaxed))
    if (yield_) sched_yield();
}

}  // namespace fleetsim::validate
