// Collectives over MPI moved as NCCL moves them: every collective is a ring (or
// chain, or pairwise exchange) of point-to-point messages of at most one slot,
// each received into a slot-sized buffer and tagged alike on every member from
// the communicator's collective sequence number, the op and its size. A rank
// whose op is smaller or larger, of another type, or one too many waits for
// messages its peers never send and spins (as an NCCL kernel polls its peers'
// flags) until the watchdog fires, at the very collective where it diverged.
// MPI never sees a size mismatch, so it never fails with MPI_ERR_TRUNCATE.
// Shared by the plan runner and the calibration sweep.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "fleetsim/scenario.h"

namespace fleetsim::validate {

// One slot: NCCL's Simple protocol buffer (4 MiB) over its 8 steps.
inline constexpr int64_t kSlotBytes = 512 * 1024;

// Send and receive buffers large enough for every op of a run, and the
// receive slots.
class Buffers {
 public:
  // max_bytes: the largest nccl-tests S of any op; ranks: the largest group.
  Buffers(int64_t max_bytes, int ranks);
  char* send() { return reinterpret_cast<char*>(send_.data()); }
  float* accumulate() { return recv_.data(); }
  int64_t capacity_bytes() const { return static_cast<int64_t>(recv_.size() * sizeof(float)); }
  char* slot() { return reinterpret_cast<char*>(slot_.data()); }

 private:
  std::vector<float> send_, recv_, slot_;
};

// One op as the caller issues it. `bytes` is nccl-tests' S; `root` a member
// index; p2p ops go to/from world rank `peer` of `comm` with `tag`. `seq` is
// this rank's count of collectives issued on `comm` (ignored for p2p).
struct CollectiveCall {
  OpKind kind = OpKind::kAllReduce;
  int64_t bytes = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  int members = 1;
  int root = 0;
  int peer = -1;
  int tag = 0;
  int64_t seq = 0;
};

// Runs `c` to completion, spinning on MPI_Test between messages (`yield`:
// sched_yield between polls, for oversubscribed cores). False when MPI reports
// an error; a missing peer makes it spin forever (the caller's watchdog ends it).
bool run_collective(const CollectiveCall& c, Buffers& buf, bool yield);

// Spins on MPI_Test until `req` completes (true) or MPI reports an error (false).
bool spin_wait(MPI_Request* req, bool yield);

}  // namespace fleetsim::validate
