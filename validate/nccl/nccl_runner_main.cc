// fleetsim-nccl-runner: one process per GPU. `run` executes one rank of a
// scaled scenario on its GPU (mpirun starts it, as for fleetsim-mpi-runner;
// MPI only hands out the ncclUniqueId and runs the CPU-side barriers);
// `calibrate` runs the NCCL sweeps for `fleetsim calibrate --backend nccl`;
// `probe` says whether this machine has a CUDA device (exit 0) or not (exit 3);
// `selftest` runs the single-GPU checks.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "sim/model/calibration.h"
#include "validate/nccl/gpu_check.h"
#include "validate/nccl/nccl_sweep.h"
#include "validate/nccl/nccl_transport.h"
#include "validate/nccl/selftest.h"
#include "validate/rank_runner.h"
#include "validate/runner_common.h"

namespace {

using namespace fleetsim;
using namespace fleetsim::validate;

constexpr int kExitNoDevice = 3;

// This process's rank among those on its machine.
int local_rank() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int r = 0;
  MPI_Comm_rank(node, &r);
  MPI_Comm_free(&node);
  return r;
}

// The device for this rank, agreed by every rank (one without a device fails all).
int device_or_fail(int rank) {
  std::string why;
  const int dev = pick_device(local_rank(), &why);
  int good = dev >= 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &good, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (dev < 0) std::fprintf(stderr, "[rank %d] error: %s\n", rank, why.c_str());
  return good ? dev : -1;
}

int run_rank(const RunArgs& a) {
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  auto plan = load_run_plan(a, world, rank == 0);
  if (!plan) return 2;
  const int dev = device_or_fail(rank);
  if (dev < 0) return kExitNoDevice;
  NcclTransport transport(*plan, rank, dev);
  if (!transport.ok()) {
    std::fprintf(stderr, "[rank %d] error: %s\n", rank, transport.why().c_str());
    return kExitNoDevice;
  }
  RunnerOptions o;
  o.work_dir = a.work;
  o.spin_step = a.spin_step;
  RankRunner runner(*plan, o, rank, transport);
  return runner.run();
}

int calibrate(const std::string& ops, const std::string& sizes, SweepOptions o) {
  if (!parse_sweep_lists(ops, sizes, &o)) return 2;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int dev = device_or_fail(rank);
  if (dev < 0) return kExitNoDevice;
  return run_nccl_sweep(o, dev);
}

int probe() {
  std::string why;
  if (pick_device(0, &why) < 0) {
    std::printf("%s\n", why.c_str());
    return kExitNoDevice;
  }
  int n = 0;
  if (const GpuStatus s = FLEETSIM_CUDA(cudaGetDeviceCount(&n)); !s.ok()) {
    std::printf("error: %s\n", s.message().c_str());
    return kExitNoDevice;
  }
  for (int d = 0; d < n; ++d) {
    cudaDeviceProp p{};
    if (const GpuStatus s = FLEETSIM_CUDA(cudaGetDeviceProperties(&p, d)); !s.ok()) {
      std::printf("device %d: error: %s\n", d, s.message().c_str());
      return kExitNoDevice;
    }
    std::printf("device %d: %s (sm_%d%d, %d SMs)\n", d, p.name, p.major, p.minor, p.multiProcessorCount);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  install_process_guards();
  CLI::App app{"fleetsim-nccl-runner: one GPU rank of a real run (started by fleetsim validate/calibrate --backend nccl)"};
  app.require_subcommand(1);
  RunArgs ra;
  CLI::App* run = add_run_command(app, ra);  // with --spin-step: the spin demonstration
  SweepOptions so;
  std::string ops = "allreduce", sizes = "2";
  add_calibrate_command(app, "Sweep NCCL collectives and write op,ranks,bytes,time_s", so, ops, sizes);
  CLI::App* pr = app.add_subcommand("probe", "Print the CUDA devices; exit 3 and say why when there are none");
  int device = 0;
  CLI::App* st = app.add_subcommand("selftest", "Single-GPU checks: compute calibration, one-rank NCCL, NVML, spin");
  st->add_option("--device", device, "CUDA device (default 0)");
  CLI11_PARSE(app, argc, argv);

  if (pr->parsed()) return probe();
  if (st->parsed()) {
    std::string why;
    if (pick_device(device, &why) < 0) {
      std::printf("%s\n", why.c_str());
      return kExitNoDevice;
    }
    return run_selftest(device);
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);  // only the main thread calls MPI
  const int rc = run->parsed() ? run_rank(ra) : calibrate(ops, sizes, so);
  MPI_Finalize();
  return rc;
}
