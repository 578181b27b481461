// The NCCL calibration sweep (see nccl_sweep.h). Groups of g members are
// consecutive world ranks (as tp groups are), split from the world communicator.
// Every CUDA and NCCL call is checked (gpu_check.h): a failure before the
// sweep starts ends it on every rank; one during the sweep is reported once and
// the sweep goes on (the ranks must keep meeting in MPI), then exits 3.
#include "validate/nccl/nccl_sweep.h"

#include <mpi.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>

#include "validate/nccl/gpu_check.h"
#include "validate/nccl/nccl_ops.h"

namespace fleetsim::validate {

namespace {

// The sweep's first failure, written once as "[rank r] error: ...".
struct Errors {
  std::string prefix;
  bool any = false;
  void fail(const std::string& why) {
    if (!any) std::fprintf(stderr, "%serror: %s\n", prefix.c_str(), why.c_str());
    any = true;
  }
  bool note(const GpuStatus& s) {
    if (!s.ok()) fail(s.message());
    return s.ok();
  }
};

struct Timer {
  cudaEvent_t start = nullptr, stop = nullptr;
  explicit Timer(Errors& e) {
    if (!e.note(FLEETSIM_CUDA(cudaEventCreate(&start)))) start = nullptr;
    if (!e.note(FLEETSIM_CUDA(cudaEventCreate(&stop)))) stop = nullptr;
  }
  ~Timer() {
    if (start) FLEETSIM_CUDA(cudaEventDestroy(start)).warn();
    if (stop) FLEETSIM_CUDA(cudaEventDestroy(stop)).warn();
  }
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
};

// Average seconds per op of `iters` back-to-back ops on this rank.
double time_batch(OpKind op, int64_t bytes, ncclComm_t comm, int g, int index, int iters, DeviceBuffers& buf,
                  cudaStream_t stream, Timer& t, Errors& e) {
  const bool p2p = op == OpKind::kSend;
  const OpKind k = p2p && index == 1 ? OpKind::kRecv : op;
  e.note(FLEETSIM_CUDA(cudaEventRecord(t.start, stream)));
  for (int i = 0; i < iters; ++i) e.note(post_nccl(k, bytes, comm, g, 0, p2p ? 1 - index : -1, buf, stream));
  e.note(FLEETSIM_CUDA(cudaEventRecord(t.stop, stream)));
  float ms = 0;
  if (e.note(FLEETSIM_CUDA(cudaEventSynchronize(t.stop))) &&
      !e.note(FLEETSIM_CUDA(cudaEventElapsedTime(&ms, t.start, t.stop))))
    ms = 0;
  return ms * 1e-3 / std::max(iters, 1);
}

// The CSV's header and its comment line: NCCL's version and the device's name.
void write_header(std::FILE* out, int device, const std::string& prefix) {
  int v = 0;
  if (!FLEETSIM_NCCL(ncclGetVersion(&v)).warn(prefix)) v = 0;
  cudaDeviceProp prop{};
  const bool named = FLEETSIM_CUDA(cudaGetDeviceProperties(&prop, device)).warn(prefix);
  std::fputs("op,ranks,bytes,time_s\n", out);
  std::fprintf(out, "# nccl %d.%d.%d %s\n", v / 10000, v % 10000 / 100, v % 100, named ? prop.name : "unknown GPU");
}

// Every op and size on groups of g (split from `wcomm`); false when the split fails.
bool sweep_groups_of(int g, const SweepOptions& o, ncclComm_t wcomm, int rank, int world, DeviceBuffers& buf,
                     cudaStream_t stream, Timer& timer, std::FILE* out, Errors& err) {
  const bool member = rank < world / g * g;
  ncclComm_t comm = nullptr;
  if (!err.note(FLEETSIM_NCCL(ncclCommSplit(wcomm, member ? rank / g : NCCL_SPLIT_NOCOLOR, rank % g, &comm, nullptr))))
    return false;
  for (OpKind op : o.ops) {
    if (op == OpKind::kSend && g != 2) continue;
    for (double b = static_cast<double>(o.min_bytes); b <= static_cast<double>(o.max_bytes) * 1.0001; b *= o.factor) {
      const auto bytes = static_cast<int64_t>(b);
      double warm = 0;
      if (member) {  // warm-up: NCCL connects lazily, and the first op of a size is slow
        time_batch(op, bytes, comm, g, rank % g, 2, buf, stream, timer, err);
        warm = time_batch(op, bytes, comm, g, rank % g, 1, buf, stream, timer, err);
      }
      MPI_Allreduce(MPI_IN_PLACE, &warm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);  // one count for all
      const int iters = std::clamp(static_cast<int>(o.budget_s / std::max(warm, 1e-9)), 3, std::max(o.iters, 3));
      MPI_Barrier(MPI_COMM_WORLD);
      double t = member ? time_batch(op, bytes, comm, g, rank % g, iters, buf, stream, timer, err) : 0.0;
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (out) {
        std::fprintf(out, "%s,%d,%" PRId64 ",%.9g\n", op == OpKind::kSend ? "sendrecv" : op_yaml_name(op), g, bytes,
                     t);
        std::fflush(out);
      }
    }
  }
  if (comm) FLEETSIM_NCCL(ncclCommDestroy(comm)).warn(err.prefix);
  return true;
}

}  // namespace

int run_nccl_sweep(const SweepOptions& o, int device) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  Errors err{"[rank " + std::to_string(rank) + "] "};
  cudaStream_t stream = nullptr;
  if (err.note(FLEETSIM_CUDA(cudaSetDevice(device))) &&
      !err.note(FLEETSIM_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking))))
    stream = nullptr;
  DeviceBuffers buf(o.max_bytes, world);
  if (!buf.ok()) err.fail("the sweep's buffers: " + buf.why());
  Timer timer(err);
  ncclUniqueId id{};
  if (rank == 0 && !err.any) err.note(FLEETSIM_NCCL(ncclGetUniqueId(&id)));
  std::FILE* out = nullptr;
  if (rank == 0) {
    out = std::fopen(o.out.c_str(), "wb");
    if (!out) std::fprintf(stderr, "error: cannot write %s\n", o.out.c_str());
  }
  // Every rank agrees before NCCL's init, which would wait for a rank that failed.
  int ok = (rank != 0 || out != nullptr) && !err.any;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!ok) return out ? 3 : 1;
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t wcomm = nullptr;
  if (!err.note(FLEETSIM_NCCL(ncclCommInitRank(&wcomm, world, id, rank)))) return 3;
  if (out) write_header(out, device, err.prefix);
  for (int g : o.group_sizes) {
    if (g < 2 || g > world) continue;
    if (!sweep_groups_of(g, o, wcomm, rank, world, buf, stream, timer, out, err)) return 3;
  }
  FLEETSIM_NCCL(ncclCommDestroy(wcomm)).warn(err.prefix);
  if (stream) FLEETSIM_CUDA(cudaStreamDestroy(stream)).warn(err.prefix);
  if (out) std::fclose(out);
  return err.any ? 3 : 0;
}

}  // namespace fleetsim::validate
