// The calibration sweep. Groups of g members are formed as consecutive world
// ranks (like tp groups) and all groups run at once, as dp/tp groups do in a run.
#include "validate/calib_sweep.h"

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "validate/mpi_ops.h"

namespace fleetsim::validate {

namespace {

// Median over iterations of this rank's time for one (op, bytes), in seconds.
double time_one(OpKind op, int64_t bytes, MPI_Comm comm, int g, int index, const SweepOptions& o, Buffers& buf) {
  int64_t seq = 0;
  auto once = [&]() {
    MPI_Barrier(comm);
    const double t = MPI_Wtime();
    const bool p2p = op == OpKind::kSend;
    const OpKind k = p2p && index == 1 ? OpKind::kRecv : op;
    run_collective({k, bytes, comm, g, 0, p2p ? 1 - index : -1, 7, seq++}, buf, o.yield);
    return MPI_Wtime() - t;
  };
  double warm = std::max(once(), once());
  MPI_Allreduce(MPI_IN_PLACE, &warm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);  // every rank agrees on the count
  const int iters = std::clamp(static_cast<int>(o.budget_s / std::max(warm, 1e-9)), 3, std::max(o.iters, 3));
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) t.push_back(once());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int run_sweep(const SweepOptions& o) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  Buffers buf(o.max_bytes, world);
  std::FILE* out = nullptr;
  if (rank == 0) {
    out = std::fopen(o.out.c_str(), "wb");
    if (!out) std::fprintf(stderr, "error: cannot write %s\n", o.out.c_str());
  }
  int ok = rank != 0 || out != nullptr;
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) return 1;
  if (out) std::fputs("op,ranks,bytes,time_s\n", out);
  for (int g : o.group_sizes) {
    if (g < 2 || g > world) continue;
    const bool member = rank < world / g * g;
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, member ? rank / g : MPI_UNDEFINED, rank % g, &comm);
    for (OpKind op : o.ops) {
      if (op == OpKind::kSend && g != 2) continue;
      for (double b = static_cast<double>(o.min_bytes); b <= static_cast<double>(o.max_bytes) * 1.0001; b *= o.factor) {
        const auto bytes = static_cast<int64_t>(b);
        double t = member ? time_one(op, bytes, comm, g, rank % g, o, buf) : 0.0;
        if (!member) {  // still take part in the count agreement of time_one
          double warm = 0;
          MPI_Allreduce(MPI_IN_PLACE, &warm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (out) {
          std::fprintf(out, "%s,%d,%" PRId64 ",%.9g\n", op == OpKind::kSend ? "sendrecv" : op_yaml_name(op), g, bytes,
                       t);
          std::fflush(out);
        }
      }
    }
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  if (out) std::fclose(out);
  return 0;
}

}  // namespace fleetsim::validate
