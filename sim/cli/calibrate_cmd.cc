// `fleetsim calibrate --backend mpi|nccl --ranks N --out calibration.yaml`:
// nccl-tests style sweeps of each collective on real MPI processes or on GPUs
// through NCCL, an alpha-beta fit per collective and group size (and, for
// nccl, the NCCL model's fabric figures fitted), the fit error printed per
// size, and the files a scenario (`calibration: FILE`) or `fleetsim validate
// --calibration` reads. `--from-nccl-tests FILE...` fits the same files to
// nccl-tests logs brought from a GPU machine instead of running anything.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "sim/cli/commands.h"
#include "sim/io/units.h"
#include "sim/io/scenario_loader.h"
#include "validate/calibrate_from_logs.h"
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
  std::vector<std::string> logs;  // --from-nccl-tests
  std::string op;
  std::string times = "min";
  bool nodes_given = false, system_given = false, backend_given = false, no_loo = false;
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
      std::printf("figure     %-12s %.3f %s\n", key.c_str(), v,
                  find_fittable_figure(key) ? find_fittable_figure(key)->unit : "");
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
      return fail("--system: error: unknown fabric preset " + quote_value(a.system) + " (expected " +
                nccl::kPresetNames + ")");
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


// --- --from-nccl-tests ---------------------------------------------------------

void print_log_header(const validate::LogCalibrateResult& r, const std::vector<std::string>& files) {
  for (const std::string& file : files) {
    std::string what;
    int n = 0;
    for (const NcclTestsTable& t : r.tables) {
      if (t.file != file) continue;
      ++n;
      what += std::string(what.empty() ? "" : ", ") + t.op_name + " on " + std::to_string(t.ranks) + " ranks (" +
              std::to_string(t.rows.size()) + " sizes, line " + std::to_string(t.line) + ")";
    }
    std::printf("log        %s: %d table%s%s%s\n", file.c_str(), n, n == 1 ? "" : "s", n ? ": " : "", what.c_str());
  }
  const nccl::Fabric& f = r.fabric;
  std::printf("machine    %d x %s on %d node%s: preset %s, %d x %d GPUs\n", f.ranks(),
              r.gpu.empty() ? "(GPU not logged)" : r.gpu.c_str(), f.nodes, f.nodes == 1 ? "" : "s", f.system.c_str(),
              f.nodes, f.gpus_per_node);
  std::printf("nccl       %s; fitted with NCCL %s's constants\n",
              r.measured_version.empty() ? "release not logged" : ("NCCL " + r.measured_version + " logged").c_str(),
              r.options.version.c_str());
  for (const std::string& n : r.notes) std::printf("note       %s\n", n.c_str());
}

void print_log_fit(const validate::LogCalibrateResult& r) {
  const NcclCalibration& n = *r.calibration.nccl;
  if (n.figures.empty()) std::printf("fit        no fabric figure lowers the error by 5%%: the preset's are kept\n");
  for (const auto& [key, v] : n.figures) {
    const FittableFigure* fig = find_fittable_figure(key);
    std::printf("fit        %-14s %7.3f %s (preset %.3f)\n", key.c_str(), v, fig ? fig->unit : "",
                fig ? figure_before_fit(*fig, r.fabric, r.fabric.ranks()) : 0.0);
  }
  for (const auto& [op, v] : n.latency_offset_us)
    std::printf("offset     %-14s %+7.2f us per call\n", nccl_tests_name(op), v);
}

double busbw_err(double measured_us, double model_us) { return model_us > 0 ? measured_us / model_us - 1 : 0.0; }

void print_log_sizes(const validate::LogCalibrateResult& r) {
  std::printf("%-14s %5s %12s %10s %9s %9s %9s %8s %8s %8s\n", "op", "ranks", "bytes", "time_us", "busbw", "model",
              "calib", "model%", "fit%", "loso%");
  for (const validate::SizeFit& z : r.sizes) {
    char loo[16] = "       -";
    if (z.loo_us) std::snprintf(loo, sizeof loo, "%+8.1f", busbw_err(z.measured_us, *z.loo_us) * 100);
    std::printf("%-14s %5d %12lld %10.2f %9.2f %9.2f %9.2f %+8.1f %+8.1f %s\n", nccl_tests_name(z.op), z.ranks,
                static_cast<long long>(z.bytes), z.measured_us, z.busbw(z.measured_us), z.busbw(z.before_us),
                z.busbw(z.fitted_us), busbw_err(z.measured_us, z.before_us) * 100,
                busbw_err(z.measured_us, z.fitted_us) * 100, loo);
  }
}

// "median 12.3% worst 48.1%" of |busbw error| over the sizes from `min_bytes` up.
std::string error_summary(const validate::LogCalibrateResult& r, int64_t min_bytes, int which) {
  std::vector<double> e;
  for (const validate::SizeFit& z : r.sizes) {
    if (z.bytes < min_bytes) continue;
    const double m = which == 0 ? z.before_us : which == 1 ? z.fitted_us : z.loo_us.value_or(-1);
    if (m > 0) e.push_back(std::abs(busbw_err(z.measured_us, m)) * 100);
  }
  if (e.empty()) return "-";
  std::sort(e.begin(), e.end());
  const double median = e.size() % 2 ? e[e.size() / 2] : (e[e.size() / 2 - 1] + e[e.size() / 2]) / 2;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f%% / %.1f%%", median, e.back());
  return buf;
}

int do_calibrate_logs(const CalibrateArgs& a) {
  if (a.backend_given) return fail("--backend: error: not with --from-nccl-tests (the logs are the measurements)");
  if (!a.op.empty() && !op_from_nccl_tests_name(a.op))
    return fail("--op: error: expected all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall or "
                "sendrecv (got " + quote_value(a.op) + ")");
  if (a.nodes_given && a.nodes < 1) return fail("--nodes: error: must be >= 1");
  if (a.times != "min" && a.times != "out-of-place" && a.times != "in-place")
    return fail("--times: error: expected min, out-of-place or in-place (got " + quote_value(a.times) + ")");
  if (!a.system.empty() && !nccl::fabric_preset(a.system))
    return fail("--system: error: unknown fabric preset " + quote_value(a.system) + " (expected " +
                nccl::kPresetNames + ")");
  if (!a.nccl_version.empty() && !nccl::constants_for_version(a.nccl_version))
    return fail(std::string("--nccl-version: error: expected ") + nccl::kSupportedVersions);
  validate::LogCalibrateSpec spec;
  spec.files = a.logs;
  spec.system = a.system_given ? a.system : "";
  spec.nccl_version = a.nccl_version;
  spec.op = a.op;
  spec.ranks = a.ranks;
  spec.nodes = a.nodes_given ? a.nodes : 0;
  spec.times = a.times;
  spec.leave_one_out = !a.no_loo;
  auto r = validate::calibrate_from_nccl_tests(spec);
  if (!r.ok()) {
    for (const Diagnostic& d : r.errors()) std::fprintf(stderr, "%s\n", d.to_string().c_str());
    return 2;
  }
  const std::string csv = validate::calibration_csv_path(a.out);
  if (auto e = write_calibration(r->calibration, a.out)) return fail(e->to_string());
  if (auto e = validate::write_size_csv(*r, csv)) return fail(e->to_string());
  print_log_header(*r, a.logs);
  print_log_fit(*r);
  print_log_sizes(*r);
  for (int64_t from : {int64_t{0}, int64_t{64} << 10})
    std::printf("error      |busbw error| median / worst%s: model %s, calibrated %s, leave-one-size-out %s\n",
                from ? " from 64 KiB up" : "", error_summary(*r, from, 0).c_str(), error_summary(*r, from, 1).c_str(),
                error_summary(*r, from, 2).c_str());
  std::printf("outputs    %s %s\n", a.out.c_str(), csv.c_str());
  return 0;
}

}  // namespace

void register_calibrate_command(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate",
                                     "Measure collectives on real processes (or read nccl-tests logs) and fit the model");
  cmd->add_option("--backend", a->backend, "Collective library: mpi (CPU processes) or nccl (one GPU per rank)");
  cmd->add_option("--system", a->system,
                  "nccl: the fabric preset the machine is (default dgx-h100; --from-nccl-tests: the logged GPU's)");
  cmd->add_option("--nodes", a->nodes, "nccl: machines the ranks span (default 1; --from-nccl-tests: the logged hosts)");
  cmd->add_option("--nccl-version", a->nccl_version,
                  "nccl, --from-nccl-tests: NCCL constants to fit with (default: the measured or logged NCCL's)");
  cmd->add_option("--ranks", a->ranks,
                  "Processes (mpirun -np); with --from-nccl-tests, the ranks of tables without '# Rank' lines");
  cmd->add_option("--from-nccl-tests", a->logs, "Fit to nccl-tests logs (*_perf output) instead of measuring")
      ->expected(1, -1);
  cmd->add_option("--op", a->op,
                  "--from-nccl-tests: the collective of tables whose log names none (all_gather, alltoall, ...)");
  cmd->add_option("--times", a->times,
                  "--from-nccl-tests: the time of a row to fit: min (default; the faster of out-of-place and "
                  "in-place), out-of-place or in-place");
  cmd->add_flag("--no-leave-one-out", a->no_loo, "--from-nccl-tests: skip the leave-one-size-out refits");
  cmd->add_option("--out,-o", a->out, "Calibration file to write (a CSV of measured vs fitted goes next to it)");
  cmd->add_option("--ops", a->ops, "Collectives: allreduce,allgather,reducescatter,broadcast,reduce,alltoall,sendrecv");
  cmd->add_option("--group-sizes", a->group_sizes, "Group sizes to sweep (default: every divisor of --ranks >= 2)");
  cmd->add_option("--min-bytes", a->min_bytes, "Smallest message (default 8B)");
  cmd->add_option("--max-bytes", a->max_bytes, "Largest message (default 64MiB)");
  cmd->add_option("--step-factor", a->factor, "Size multiplier between steps (default 2)");
  cmd->add_option("--iters", a->iters, "Timed iterations per size, at most (default 20)");
  cmd->add_option("--hostfile", a->hostfile, "mpirun hostfile (a cluster); default: every rank here");
  add_progress_flag(cmd);
  cmd->callback([a, exit_code, cmd] {
    a->nodes_given = cmd->count("--nodes") > 0;
    a->system_given = cmd->count("--system") > 0;
    a->backend_given = cmd->count("--backend") > 0;
    *exit_code = a->logs.empty() ? do_calibrate(*a) : do_calibrate_logs(*a);
  });
}

}  // namespace fleetsim::cli
