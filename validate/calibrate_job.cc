// The calibration job: launcher + sweep + fit + files (see calibrate_job.h).
#include "validate/calibrate_job.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fleetsim/file_read.h"
#include "fleetsim/progress.h"
#include "validate/launcher.h"

namespace fs = std::filesystem;

namespace fleetsim::validate {

std::string calibration_csv_path(const std::string& yaml_path) {
  fs::path p(yaml_path);
  if (p.extension() == ".yaml" || p.extension() == ".yml") p.replace_extension();
  return p.string() + ".csv";
}

double busbw_factor(OpKind op, int n) {
  const double d = n;
  switch (op) {
    case OpKind::kAllReduce: return 2.0 * (d - 1) / d;
    case OpKind::kAllGather: case OpKind::kReduceScatter: case OpKind::kAllToAll: return (d - 1) / d;
    default: return 1.0;
  }
}

namespace {

std::string join_ops(const std::vector<OpKind>& ops) {
  std::string s;
  for (OpKind k : ops) s += std::string(s.empty() ? "" : ",") + (k == OpKind::kSend ? "sendrecv" : op_yaml_name(k));
  return s;
}

std::vector<CalibrationSample> read_samples(const std::string& csv, std::string* measured_with) {
  std::vector<CalibrationSample> out;
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.rfind("# nccl ", 0) == 0) {  // the NCCL runner's version and device
      *measured_with = line.substr(7);
      continue;
    }
    std::stringstream ss(line);
    std::string op, ranks, bytes, t;
    if (!std::getline(ss, op, ',') || !std::getline(ss, ranks, ',') || !std::getline(ss, bytes, ',') ||
        !std::getline(ss, t, ','))
      continue;
    const auto k = collective_from_name(op);
    if (!k) continue;
    out.push_back({*k, std::atoi(ranks.c_str()), std::atoll(bytes.c_str()), std::atof(t.c_str())});
  }
  return out;
}

std::optional<Diagnostic> write_fit_csv(const CalibrateResult& r) {
  std::ostringstream f;
  f << "op,ranks,bytes,time_us,fit_us,rel_err,algbw_GBps,busbw_GBps\n";
  char buf[256];
  for (const CalibrationSample& s : r.samples) {
    const CollectiveFit* fit = r.calibration.find(s.op, s.ranks);
    if (!fit || s.time_s <= 0) continue;
    const double ft = fitted_time_s(r, s);
    const double algbw = static_cast<double>(s.bytes) / s.time_s / 1e9;
    std::snprintf(buf, sizeof buf, "%s,%d,%lld,%.3f,%.3f,%.4f,%.4f,%.4f\n",
                  s.op == OpKind::kSend ? "sendrecv" : op_yaml_name(s.op), s.ranks,
                  static_cast<long long>(s.bytes), s.time_s * 1e6, ft * 1e6, (ft - s.time_s) / s.time_s, algbw,
                  algbw * busbw_factor(s.op, s.ranks));
    f << buf;
  }
  return write_file_whole(r.csv, f.str(), "measured-vs-fitted CSV");
}

}  // namespace

double fitted_time_s(const CalibrateResult& r, const CalibrationSample& s) {
  if (r.calibration.nccl) {
    const NcclCalibration& n = *r.calibration.nccl;
    auto base = nccl::fabric_preset(n.system);
    nccl::Fabric f = base ? *base : nccl::Fabric{};
    f.nodes = n.nodes;
    f.gpus_per_node = n.gpus_per_node;
    NcclOptions o;
    o.version = n.version;
    auto m = nccl::Model::create(apply_nccl_figures(n, f), o);
    if (m.ok()) return nccl_calibrated_time_s(n, *m, s.op, s.bytes, s.ranks);
  }
  const CollectiveFit* fit = r.calibration.find(s.op, s.ranks);
  return fit ? fit->fit.time_s(s.bytes) : 0.0;
}

std::optional<Diagnostic> fit_nccl_section(const CalibrateSpec& spec, const std::string& measured_version,
                                           const std::vector<CalibrationSample>& samples, Calibration* c) {
  auto preset = nccl::fabric_preset(spec.system);
  if (!preset) return Diagnostic::in_file("--system", "unknown fabric preset '" + spec.system + "' (expected " +
                                            nccl::kPresetNames + ")");
  nccl::Fabric f = *preset;
  f.nodes = std::max(1, spec.nodes);
  f.gpus_per_node = std::max(1, spec.ranks / f.nodes);
  NcclOptions o;
  o.version = !spec.nccl_version.empty() ? spec.nccl_version
              : !measured_version.empty() ? measured_version.substr(0, measured_version.find(' '))
                                          : "2.30";
  if (!nccl::constants_for_version(o.version)) o.version = "2.30";  // later releases use the newest constants
  auto fit = fit_nccl(samples, f, o);
  if (!fit.ok()) return Diagnostic::in_file("nccl fit", fit.errors()[0].message);
  c->nccl = std::move(*fit);
  return std::nullopt;
}

Result<CalibrateResult> run_calibration(const CalibrateSpec& spec) {
  const bool gpu = spec.backend == "nccl";
  const auto runner = find_runner(gpu ? "fleetsim-nccl-runner" : "fleetsim-mpi-runner");
  if (!runner)
    return gpu ? Diagnostic::in_file("fleetsim-nccl-runner", "not found next to the fleetsim executable (build with CUDA, NCCL and MPI)")
               : Diagnostic::in_file("fleetsim-mpi-runner", "not found next to the fleetsim executable (build with MPI)");
  const std::string work = spec.out + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  if (ec) return Diagnostic::in_file(spec.out, "cannot create " + work + ": " + ec.message());
  std::vector<int> sizes = spec.group_sizes;
  if (sizes.empty())
    for (int g = 2; g <= spec.ranks; ++g)
      if (spec.ranks % g == 0) sizes.push_back(g);
  std::string size_list;
  for (int g : sizes) size_list += (size_list.empty() ? "" : ",") + std::to_string(g);
  LaunchSpec ls;
  ls.runner = *runner;
  ls.ranks = spec.ranks;
  ls.hostfile = spec.hostfile;
  ls.log_file = work + "/mpirun.log";
  ls.watch_dir = work;
  ls.idle_limit_s = 120;
  ls.args = {"calibrate", "--out", work + "/raw.csv", "--ops", join_ops(spec.ops), "--group-sizes", size_list,
             "--min-bytes", std::to_string(spec.min_bytes), "--max-bytes", std::to_string(spec.max_bytes),
             "--factor", std::to_string(spec.factor), "--iters", std::to_string(spec.iters), "--budget-s",
             std::to_string(spec.budget_s)};
  if (!gpu && spec.ranks > static_cast<int>(std::thread::hardware_concurrency())) ls.args.push_back("--yield");
  // Progress: one raw.csv row per (op, group size, message size) measured.
  int64_t per_op = 0;  // as the runner's sweep walks them (validate/calib_sweep.cc)
  for (double b = static_cast<double>(spec.min_bytes); b <= static_cast<double>(spec.max_bytes) * 1.0001 && per_op < 1000;
       b *= std::max(2.0, static_cast<double>(spec.factor)))
    ++per_op;
  int64_t rows_total = 0;
  for (OpKind op : spec.ops)
    for (int g : sizes) rows_total += op == OpKind::kSend && g != 2 ? 0 : per_op;
  ProgressMeter meter("calibrate", "sizes", rows_total);
  if (progress_enabled()) {
    ls.on_poll = [&meter, csv = work + "/raw.csv"] {
      std::ifstream in(csv);
      int64_t rows = 0;
      for (std::string line; std::getline(in, line);)
        rows += !line.empty() && line[0] != '#' && line.rfind("op,", 0) != 0;  // not the header
      meter.update(rows);
    };
  }
  const auto lr = launch(ls);
  meter.finish();
  CalibrateResult r;
  r.samples = read_samples(work + "/raw.csv", &r.measured_with);
  if (!lr || lr->exit_code != 0 || r.samples.empty()) {
    std::ifstream log(work + "/mpirun.log");
    std::string first;
    std::getline(log, first);
    fs::remove_all(work, ec);
    return Diagnostic::in_file("mpirun", "calibration job failed (exit " + std::to_string(lr ? lr->exit_code : -1) + ")" +
                               (first.empty() ? "" : ": " + first));
  }
  fs::remove_all(work, ec);
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  r.calibration.backend = gpu ? "nccl" : "mpi";
  r.calibration.host = host;
  r.calibration.ranks = spec.ranks;
  r.calibration.fits = fit_all(r.samples);
  if (gpu)
    if (auto e = fit_nccl_section(spec, r.measured_with, r.samples, &r.calibration)) return *e;
  if (auto e = write_calibration(r.calibration, spec.out)) return *e;
  r.csv = calibration_csv_path(spec.out);
  if (auto e = write_fit_csv(r)) return *e;
  return r;
}

}  // namespace fleetsim::validate
