// The NCCL calibration sweep (see nccl_sweep.h). Groups of g members are
// consecutive world ranks (as tp groups are), split from the world communicator.
#include "validate/nccl/nccl_sweep.h"

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "validate/nccl/nccl_ops.h"

namespace fleetsim::validate {

namespace {

struct Timer {
  cudaEvent_t start = nullptr, stop = nullptr;
  Timer() {
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~Timer() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
};

// Average seconds per op of `iters` back-to-back ops on this rank.
double time_batch(OpKind op, int64_t bytes, ncclComm_t comm, int g, int index, int iters, DeviceBuffers& buf,
                  cudaStream_t stream, Timer& t, bool* ok) {
  const bool p2p = op == OpKind::kSend;
  const OpKind k = p2p && index == 1 ? OpKind::kRecv : op;
  cudaEventRecord(t.start, stream);
  for (int i = 0; i < iters; ++i)
    if (post_nccl(k, bytes, comm, g, 0, p2p ? 1 - index : -1, buf, stream) != ncclSuccess) *ok = false;
  cudaEventRecord(t.stop, stream);
  if (cudaEventSynchronize(t.stop) != cudaSuccess) *ok = false;
  float ms = 0;
  cudaEventElapsedTime(&ms, t.start, t.stop);
  return ms * 1e-3 / std::max(iters, 1);
}

}  // namespace

int run_nccl_sweep(const SweepOptions& o, int device) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  cudaSetDevice(device);
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  DeviceBuffers buf(o.max_bytes, world);
  std::FILE* out = nullptr;
  if (rank == 0) {
    out = std::fopen(o.out.c_str(), "wb");
    if (!out) std::fprintf(stderr, "error: cannot write %s\n", o.out.c_str());
  }
  int ok = (rank != 0 || out != nullptr) && buf.ok();
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok) return out ? 3 : 1;
  ncclUniqueId id{};
  if (rank == 0) ncclGetUniqueId(&id);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t wcomm = nullptr;
  if (ncclResult_t r = ncclCommInitRank(&wcomm, world, id, rank); r != ncclSuccess) {
    std::fprintf(stderr, "[rank %d] ncclCommInitRank: %s\n", rank, nccl_error(r).c_str());
    return 3;
  }
  Timer timer;
  if (out) {
    int v = 0;
    ncclGetVersion(&v);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, device);
    std::fputs("op,ranks,bytes,time_s\n", out);
    std::fprintf(out, "# nccl %d.%d.%d %s\n", v / 10000, v % 10000 / 100, v % 100, prop.name);
  }
  bool good = true;
  for (int g : o.group_sizes) {
    if (g < 2 || g > world) continue;
    const bool member = rank < world / g * g;
    ncclComm_t comm = nullptr;
    if (ncclResult_t r = ncclCommSplit(wcomm, member ? rank / g : NCCL_SPLIT_NOCOLOR, rank % g, &comm, nullptr);
        r != ncclSuccess) {
      std::fprintf(stderr, "[rank %d] ncclCommSplit: %s\n", rank, nccl_error(r).c_str());
      return 3;
    }
    for (OpKind op : o.ops) {
      if (op == OpKind::kSend && g != 2) continue;
      for (double b = static_cast<double>(o.min_bytes); b <= static_cast<double>(o.max_bytes) * 1.0001; b *= o.factor) {
        const auto bytes = static_cast<int64_t>(b);
        double warm = 0;
        if (member) {  // warm-up: NCCL connects lazily, and the first op of a size is slow
          time_batch(op, bytes, comm, g, rank % g, 2, buf, stream, timer, &good);
          warm = time_batch(op, bytes, comm, g, rank % g, 1, buf, stream, timer, &good);
        }
        MPI_Allreduce(MPI_IN_PLACE, &warm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);  // one count for all
        const int iters = std::clamp(static_cast<int>(o.budget_s / std::max(warm, 1e-9)), 3, std::max(o.iters, 3));
        MPI_Barrier(MPI_COMM_WORLD);
        double t = member ? time_batch(op, bytes, comm, g, rank % g, iters, buf, stream, timer, &good) : 0.0;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (out) {
          std::fprintf(out, "%s,%d,%" PRId64 ",%.9g\n", op == OpKind::kSend ? "sendrecv" : op_yaml_name(op), g, bytes,
                       t);
          std::fflush(out);
        }
      }
    }
    if (comm) ncclCommDestroy(comm);
  }
  ncclCommDestroy(wcomm);
  cudaStreamDestroy(stream);
  if (out) std::fclose(out);
  return good ? 0 : 3;
}

}  // namespace fleetsim::validate
