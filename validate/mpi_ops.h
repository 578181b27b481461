// Collectives as real nonblocking MPI operations on real buffers, and the wait
// that spins on MPI_Test as an NCCL kernel spins on its flags (100% busy while
// peers are missing). Shared by the plan runner and the calibration sweep.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "fleetsim/scenario.h"

namespace fleetsim::validate {

// Send and receive buffers large enough for every op of a run.
class Buffers {
 public:
  // max_bytes: the largest nccl-tests S of any op; ranks: the largest group.
  Buffers(int64_t max_bytes, int ranks);
  float* send() { return send_.data(); }
  float* recv() { return recv_.data(); }

 private:
  std::vector<float> send_, recv_;
};

// Posts op `kind` moving nccl-tests' S = `bytes` on `comm` (`n` members, `root`
// a member index); p2p ops go to/from world rank `peer` with `tag`. Returns the
// MPI error code (MPI_SUCCESS normally); *req is the request to wait on.
int post_collective(OpKind kind, int64_t bytes, MPI_Comm comm, int n, int root, int peer, int tag,
                    Buffers& buf, MPI_Request* req);

// Spins on MPI_Test until `req` completes (true) or MPI reports an error
// (false). `yield`: call sched_yield between polls (ranks oversubscribe cores).
bool spin_wait(MPI_Request* req, bool yield);

}  // namespace fleetsim::validate
