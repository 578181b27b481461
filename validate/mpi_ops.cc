// The slot transport of mpi_ops.h: ring all-reduce (reduce-scatter then
// all-gather, 2(n-1) steps of S/n), ring all-gather and reduce-scatter (n-1
// steps of S/n), chain broadcast and reduce (pipelined slot by slot), pairwise
// all-to-all (n-1 rounds of S/n), barrier as a one-element all-reduce, and
// send/recv cut into slots. Reductions add the received floats, so a reduction
// costs CPU time as a GPU's reduction costs kernel time.
#include "validate/mpi_ops.h"

#include <sched.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace fleetsim::validate {

Buffers::Buffers(int64_t max_bytes, int ranks) {
  const auto floats = static_cast<size_t>(std::max<int64_t>(max_bytes, kSlotBytes) / 4 + 16 * std::max(ranks, 1) + 16);
  send_.assign(floats, 1.0f);
  recv_.assign(floats, 0.0f);
  slot_.assign(static_cast<size_t>(kSlotBytes / 4), 0.0f);
}

bool spin_wait(MPI_Request* req, bool yield) {
  for (;;) {
    int done = 0;
    if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (yield) sched_yield();
  }
}

namespace {

// A collective's messages carry a tag that every member derives alike from
// (sequence number, op, size, root): a rank whose op differs from its peers' in
// any of these (or that is a collective ahead) sends and waits on another tag,
// so nothing matches and every member waits, as NCCL's kernels wait on peers'
// flags when two ranks run differently shaped ops (another protocol, other
// chunk and step counts). p2p tags stay below kFirstCollectiveTag.
constexpr int kFirstCollectiveTag = 1000;

int tag_upper_bound() {
  static const int ub = [] {
    int* v = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
    return flag && v ? *v : 32767;  // the standard's minimum
  }();
  return ub;
}

int collective_tag(const CollectiveCall& c) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (const uint64_t x : {static_cast<uint64_t>(c.seq), static_cast<uint64_t>(c.kind), static_cast<uint64_t>(c.bytes),
                           static_cast<uint64_t>(c.root)}) {
    h ^= x + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  const auto span = static_cast<uint64_t>(tag_upper_bound() - kFirstCollectiveTag);
  return kFirstCollectiveTag + static_cast<int>(h % span);
}

bool spin_wait_all(int n, MPI_Request* reqs, bool yield) {
  for (;;) {
    int done = 0;
    if (MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (yield) sched_yield();
  }
}

// One transfer of `bytes`: sends to `to` and receives from `from` (either may be
// MPI_PROC_NULL), slot by slot; `reduce` adds each received slot into the
// accumulation buffer at `offset`; `forward`: a slot is sent only once the
// previous member's has arrived (a chain), else both run at once (a ring step).
struct Transfer {
  int to = MPI_PROC_NULL, from = MPI_PROC_NULL;
  int64_t bytes = 0, offset = 0;
  bool reduce = false;
  bool forward = false;
};

bool exchange(const Transfer& t, MPI_Comm comm, int tag, Buffers& buf, bool yield) {
  const int64_t slots = std::max<int64_t>(1, (t.bytes + kSlotBytes - 1) / kSlotBytes);
  for (int64_t s = 0; s < slots; ++s) {
    const int64_t piece = std::clamp<int64_t>(t.bytes - s * kSlotBytes, 1, kSlotBytes);
    std::array<MPI_Request, 2> reqs = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    const int64_t at = std::min(t.offset + s * kSlotBytes, std::max<int64_t>(0, buf.capacity_bytes() - kSlotBytes));
    if (MPI_Irecv(buf.slot(), static_cast<int>(kSlotBytes), MPI_BYTE, t.from, tag, comm, &reqs[0]) != MPI_SUCCESS)
      return false;
    if (t.forward && !spin_wait(&reqs[0], yield)) return false;
    if (MPI_Isend(buf.send() + at, static_cast<int>(piece), MPI_BYTE, t.to, tag, comm, &reqs[1]) != MPI_SUCCESS ||
        !spin_wait_all(2, reqs.data(), yield))
      return false;
    if (t.reduce && t.from != MPI_PROC_NULL) {
      const float* in = reinterpret_cast<const float*>(buf.slot());
      float* acc = buf.accumulate() + at / 4;
      for (int64_t k = 0; k < piece / 4; ++k) acc[k] += in[k];
    }
  }
  return true;
}

int64_t share(int64_t bytes, int n) { return std::max<int64_t>(1, bytes / std::max(n, 1)); }

// Ring steps: each sends its share to the next member and receives from the previous.
bool ring(const CollectiveCall& c, int me, int steps, int reduce_steps, Buffers& buf, bool yield) {
  const int n = c.members;
  const int64_t part = share(c.bytes, n);
  const int tag = collective_tag(c);
  for (int k = 0; k < steps; ++k) {
    const int64_t chunk = ((me - k) % n + n) % n;
    const Transfer t{(me + 1) % n, (me + n - 1) % n, part, chunk * part, k < reduce_steps, false};
    if (!exchange(t, c.comm, tag, buf, yield)) return false;
  }
  return true;
}

// A chain from the root through the members in order (broadcast), or towards it (reduce).
bool chain(const CollectiveCall& c, int me, bool towards_root, Buffers& buf, bool yield) {
  const int n = c.members;
  const int pos = (me - c.root + n) % n;  // 0 = the root
  const auto member = [&](int p) { return (c.root + p) % n; };
  Transfer t{MPI_PROC_NULL, MPI_PROC_NULL, c.bytes, 0, towards_root, true};
  if (towards_root) {
    if (pos > 0) t.to = member(pos - 1);
    if (pos < n - 1) t.from = member(pos + 1);
  } else {
    if (pos > 0) t.from = member(pos - 1);
    if (pos < n - 1) t.to = member(pos + 1);
  }
  // Slot by slot a member receives, then forwards: the chain is pipelined.
  return exchange(t, c.comm, collective_tag(c), buf, yield);
}

bool all_to_all(const CollectiveCall& c, int me, Buffers& buf, bool yield) {
  const int n = c.members;
  const int64_t part = share(c.bytes, n);
  for (int r = 1; r < n; ++r) {
    const Transfer t{(me + r) % n, (me - r + n) % n, part, r * part, false, false};
    if (!exchange(t, c.comm, collective_tag(c), buf, yield)) return false;
  }
  return true;
}

}  // namespace

bool run_collective(const CollectiveCall& c, Buffers& buf, bool yield) {
  int me = 0;
  if (c.kind == OpKind::kSend || c.kind == OpKind::kRecv) {
    Transfer t{MPI_PROC_NULL, MPI_PROC_NULL, c.bytes, 0, false, false};
    (c.kind == OpKind::kSend ? t.to : t.from) = c.peer;
    return exchange(t, c.comm, c.tag, buf, yield);
  }
  if (c.kind != OpKind::kAllReduce && c.kind != OpKind::kBarrier && c.kind != OpKind::kAllGather &&
      c.kind != OpKind::kReduceScatter && c.kind != OpKind::kBroadcast && c.kind != OpKind::kReduce &&
      c.kind != OpKind::kAllToAll) {
    MPI_Request req;  // a CPU-side (store) barrier
    return MPI_Ibarrier(c.comm, &req) == MPI_SUCCESS && spin_wait(&req, yield);
  }
  if (MPI_Comm_rank(c.comm, &me) != MPI_SUCCESS) return false;
  if (c.members < 2) return true;
  const int n = c.members;
  switch (c.kind) {
    case OpKind::kAllReduce:
      return ring(c, me, 2 * (n - 1), n - 1, buf, yield);
    case OpKind::kBarrier: {  // ProcessGroupNCCL's barrier is a one-element all-reduce
      CollectiveCall one = c;
      one.bytes = 4L * n;
      return ring(one, me, 2 * (n - 1), n - 1, buf, yield);
    }
    case OpKind::kAllGather:
      return ring(c, me, n - 1, 0, buf, yield);
    case OpKind::kReduceScatter:
      return ring(c, me, n - 1, n - 1, buf, yield);
    case OpKind::kBroadcast:
      return chain(c, me, false, buf, yield);
    case OpKind::kReduce:
      return chain(c, me, true, buf, yield);
    default:
      return all_to_all(c, me, buf, yield);
  }
}

}  // namespace fleetsim::validate
