// `fleetsim calibrate --backend mpi|nccl --ranks N --out calibration.yaml`:
// nccl-tests style sweeps of each collective on real MPI processes or on GPUs
// through NCCL, an alpha-beta fit per collective and group size (and, for
// nccl, the NCCL model's fabric figures fitted), the fit error printed per
// size, and the files a scenario (`calibration: FILE`) or `fleetsim validate
// --calibration` reads.
#include <cstdio>

#include "sim/cli/commands.h"
#include "sim/io/units.h"
#include "sim/io/scenario_loader.h"
#include "validate/calibrate_job.h"
#include "validate/launcher.h"

namespace fleetsim::cli {

namespace {

struct CalibrateArgs {
  std::string backend = "mpi", out = "calibration.yaml", ops, group_sizes, min_bytes = "8B", max_bytes = "64MiB";
  std::string hostfile, system = "dgx-h100", nccl_version;
  int ranks = 0, nodes = 1;
  double factor = 2.0;
  int iters = 20;
};

int fail(const std::string& msg) {
  std::fprintf(stderr, "%s\n", msg.c_str());
  return 2;
}


void print_result(const validate::CalibrateResult& r, const std::string& out) {
  std::printf("%-13s %5s %10s %11s %11s %8s %11s\n", "op", "ranks", "bytes", "time_us", "fit_us", "err%",
              "busbw_GB/s");
  for (const CalibrationSample& s : r.samples) {
    const double ft = validate::fitted_time_s(r, s);
    const double busbw = static_cast<double>(s.bytes) / s.time_s / 1e9 * validate::busbw_factor(s.op, s.ranks);
    std::printf("%-13s %5d %10lld %11.2f %11.2f %+8.1f %11.3f\n", s.op == OpKind::kSend ? "sendrecv" : op_yaml_name(s.op),
                s.ranks, static_cast<long long>(s.bytes), s.time_s * 1e6, ft * 1e6, (ft - s.time_s) / s.time_s * 100,
                busbw);
  }
  for (const CollectiveFit& f : r.calibration.fits)
    std::printf("fit        %-13s ranks %d: alpha %.2f us, beta %.4f ns/B (%.2f GB/s), max |err| %.1f%%\n",
                f.op == OpKind::kSend ? "sendrecv" : op_yaml_name(f.op), f.ranks, f.fit.alpha_s * 1e6,
                f.fit.beta_s_per_byte * 1e9, f.fit.beta_s_per_byte > 0 ? 1e-9 / f.fit.beta_s_per_byte : 0.0,
                f.max_rel_err * 100);
  if (const auto& n = r.calibration.nccl) {
    std::printf("nccl       model %s (NCCL %s constants) on %s, %d node(s) x %d GPUs; measured with %s\n",
                n->figures.empty() ? "as derived" : "with fitted figures", n->version.c_str(), n->system.c_str(),
                n->nodes, n->gpus_per_node, r.measured_with.empty() ? "?" : r.measured_with.c_str());
    for (const auto& [key, v] : n->figures)
      std::printf("figure     %-12s %.3f %s\n", key.c_str(), v, key == "net_latency" ? "us" : "GB/s per channel");
    for (const auto& [op, v] : n->latency_offset_us)
      std::printf("offset     %-12s %+.2f us\n", op == OpKind::kSend ? "sendrecv" : op_yaml_name(op), v);
    std::printf("fit        max |err| %.1f%% over %d samples\n", n->max_rel_err * 100, n->samples);
  }
  std::printf("outputs    %s %s\n", out.c_str(), r.csv.c_str());
}

int do_calibrate(const CalibrateArgs& a) {
  if (a.backend != "mpi" && a.backend != "nccl")
    return fail("--backend: error: unknown backend " + quote_value(a.backend) + " (expected mpi or nccl)");
  if (a.ranks < 2)
    return fail("--ranks: error: need at least 2 ranks (got " + std::to_string(a.ranks) + ")" +
                (a.backend == "nccl" ? "; with one GPU run fleetsim-nccl-runner selftest" : ""));
  if (a.backend == "nccl") {
    if (!nccl::fabric_preset(a.system))
      return fail("--system: error: unknown fabric preset " + quote_value(a.system) + " (expected " + nccl::kPresetNames + ")");
    if (a.nodes < 1 || a.ranks % a.nodes != 0) return fail("--nodes: error: must divide --ranks");
    if (!a.nccl_version.empty() && !nccl::constants_for_version(a.nccl_version))
      return fail(std::string("--nccl-version: error: expected ") + nccl::kSupportedVersions);
    if (const std::string why = validate::nccl_backend_unavailable(); !why.empty())
      return fail("--backend nccl: error: " + why);
  }
  if (!(a.factor > 1.0)) return fail("--step-factor: error: must be > 1");
  if (!a.hostfile.empty())
    if (const std::string why = validate::hostfile_unreadable(a.hostfile); !why.empty())
      return fail("--hostfile: error: " + why);
  validate::CalibrateSpec spec;
  spec.backend = a.backend;
  spec.system = a.system;
  spec.nodes = a.nodes;
  spec.nccl_version = a.nccl_version;
  spec.ranks = a.ranks;
  spec.out = a.out;
  spec.hostfile = a.hostfile;
  spec.factor = a.factor;
  spec.iters = a.iters;
  auto lo = parse_bytes(a.min_bytes), hi = parse_bytes(a.max_bytes);
  if (!lo.ok()) return fail("--min-bytes: error: " + lo.errors()[0].message);
  if (!hi.ok()) return fail("--max-bytes: error: " + hi.errors()[0].message);
  spec.min_bytes = std::max<int64_t>(1, *lo);
  spec.max_bytes = *hi;
  if (spec.max_bytes < spec.min_bytes) return fail("--max-bytes: error: smaller than --min-bytes");
  if (!a.ops.empty()) {
    spec.ops.clear();
    for (const std::string& name : split_list(a.ops)) {
      const auto k = collective_from_name(name);
      if (!k) return fail("--ops: error: unknown collective " + quote_value(name));
      spec.ops.push_back(*k);
    }
  }
  for (const std::string& g : split_list(a.group_sizes)) {
    const int n = std::atoi(g.c_str());
    if (n < 2 || n > a.ranks || a.ranks % n != 0)
      return fail("--group-sizes: error: " + g + " must divide --ranks and be >= 2");
    spec.group_sizes.push_back(n);
  }
  auto r = validate::run_calibration(spec);
  if (!r.ok()) {
    for (const Diagnostic& d : r.errors()) std::fprintf(stderr, "%s\n", d.to_string().c_str());
    return 1;
  }
  print_result(*r, a.out);
  return 0;
}

}  // namespace

void register_calibrate_command(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Measure collectives on real processes and fit an alpha-beta model");
  cmd->add_option("--backend", a->backend, "Collective library: mpi (CPU processes) or nccl (one GPU per rank)");
  cmd->add_option("--system", a->system, "nccl: the fabric preset the machine is (default dgx-h100)");
  cmd->add_option("--nodes", a->nodes, "nccl: machines the ranks span (default 1)");
  cmd->add_option("--nccl-version", a->nccl_version, "nccl: NCCL constants to fit with (default: the measured NCCL's)");
  cmd->add_option("--ranks", a->ranks, "Processes (mpirun -np)")->required();
  cmd->add_option("--out,-o", a->out, "Calibration file to write (a CSV of measured vs fitted goes next to it)");
  cmd->add_option("--ops", a->ops, "Collectives: allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv");
  cmd->add_option("--group-sizes", a->group_sizes, "Group sizes to sweep (default: every divisor of --ranks >= 2)");
  cmd->add_option("--min-bytes", a->min_bytes, "Smallest message (default 8B)");
  cmd->add_option("--max-bytes", a->max_bytes, "Largest message (default 64MiB)");
  cmd->add_option("--step-factor", a->factor, "Size multiplier between steps (default 2)");
  cmd->add_option("--iters", a->iters, "Timed iterations per size, at most (default 20)");
  cmd->add_option("--hostfile", a->hostfile, "mpirun hostfile (a cluster); default: every rank here");
  add_progress_flag(cmd);
  cmd->callback([a, exit_code] { *exit_code = do_calibrate(*a); });
}

}  // namespace fleetsim::cli
