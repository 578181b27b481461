// Calibration from nccl-tests logs (see calibrate_from_logs.h): the tables to
// samples, the measured machine to a fabric, fit_nccl over all samples, and the
// same fit repeated without each size to show how well it predicts what it
// has not seen.
#include "validate/calibrate_from_logs.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <sstream>

#include "fleetsim/file_read.h"

namespace fleetsim::validate {

namespace {

Diagnostic error(const std::string& file, int line, const std::string& msg) {
  Diagnostic d;
  d.loc.file = file;
  d.loc.line = line;
  d.message = msg;
  return d;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The model's time for one size in us (0 if the model has no entry for it).
double model_us(const nccl::Model& m, OpKind op, int64_t bytes, int ranks, int gpus_per_node) {
  const auto coll = nccl::coll_from_op(op);
  if (!coll) return 0.0;
  const nccl::Estimate e = m.estimate(*coll, bytes, sweep_group_shape(ranks, gpus_per_node));
  return e.ok ? e.time_us : 0.0;
}

struct Sample {
  CalibrationSample s;
  std::string where;
};

// The tables' rows as samples; tables without a collective or ranks are
// resolved from the spec or refused.
Result<std::vector<Sample>> samples_of(const LogCalibrateSpec& spec, std::vector<NcclTestsTable>* tables,
                                       std::vector<std::string>* notes) {
  std::vector<Sample> out;
  std::vector<NcclTestsTable> used;
  for (NcclTestsTable& t : *tables) {
    const std::string at = t.file + ":" + std::to_string(t.line);
    if (!t.op && t.op_name.empty() && !spec.op.empty()) {
      t.op = op_from_nccl_tests_name(spec.op);
      t.op_name = spec.op;
      t.op_source = "--op";
    }
    if (!t.op && !t.op_name.empty()) {
      notes->push_back(at + ": " + t.op_name + " left out (not a collective fleetsim models)");
      continue;
    }
    if (t.ranks == 0) t.ranks = spec.ranks;
    if (t.ranks < 2)
      return error(t.file, t.line, t.ranks == 0 ? "no '# Rank' lines before this table: pass --ranks N"
                                                : "a one-rank table has no collective to fit (nccl-tests built "
                                                  "without MPI=1 and started by mpirun prints one per process)");
    if (!t.op)
      return error(t.file, t.line, "this table does not say which collective it measured (no program name before "
                                   "it or in the file name, and its layout fits several, as all_gather's and "
                                   "alltoall's do): pass --op NAME or name it in the file name");
    for (const NcclTestsRow& r : t.rows) {
      std::optional<double> us = r.time_us;
      if (spec.times == "in-place") us = r.in_place_time_us;
      if (spec.times == "min" && r.in_place_time_us && *r.in_place_time_us > 0)
        us = std::min(r.time_us, *r.in_place_time_us);
      if (r.bytes <= 0 || !us || *us <= 0) continue;
      out.push_back({{*t.op, t.ranks, r.bytes, *us * 1e-6}, t.file + ":" + std::to_string(r.line)});
    }
    used.push_back(t);
  }
  *tables = std::move(used);
  if (out.empty()) return error(spec.files.empty() ? "" : spec.files[0], 0, "no rows with a size above 0 to fit");
  return out;
}

// The measured machine: the preset of the logs' GPU, with the widest table's
// nodes (its distinct hosts) and GPUs per node.
Result<nccl::Fabric> machine_of(const LogCalibrateSpec& spec, LogCalibrateResult* r) {
  const NcclTestsTable* widest = nullptr;
  for (const NcclTestsTable& t : r->tables) {
    if (!t.gpu.empty() && r->gpu.empty()) r->gpu = t.gpu;
    if (t.mixed_gpus)
      return error(t.file, t.line, "the ranks of this table name different GPUs: calibrate one kind of machine");
    if (!t.gpu.empty() && t.gpu != r->gpu)
      return error(t.file, t.line, "this table ran on '" + t.gpu + "', an earlier one on '" + r->gpu +
                                       "': calibrate one kind of machine at a time");
    if (!t.nccl_version.empty() && r->measured_version.empty()) r->measured_version = t.nccl_version;
    if (!widest || t.ranks > widest->ranks) widest = &t;
  }
  const std::string system = !spec.system.empty() ? spec.system : preset_for_gpu(r->gpu);
  if (system.empty())
    return error(widest->file, 0, "GPU '" + r->gpu + "' matches no fabric preset: pass --system (" +
                                      nccl::kPresetNames + ")");
  auto preset = nccl::fabric_preset(system);
  if (!preset)
    return error("--system", 0, "unknown fabric preset '" + system + "' (expected " + nccl::kPresetNames + ")");
  nccl::Fabric f = *preset;
  if (widest->ranks_listed < widest->ranks && spec.nodes <= 0)
    return error(widest->file, widest->line, "only " + std::to_string(widest->ranks_listed) + " of the " +
                                                 std::to_string(widest->ranks) +
                                                 " '# Rank' lines are in the log, so its hosts do not count the "
                                                 "nodes: pass --nodes");
  r->hosts = widest->hosts;
  f.nodes = spec.nodes > 0 ? spec.nodes : std::max(1, widest->nodes());
  f.gpus_per_node = (widest->ranks + f.nodes - 1) / f.nodes;
  if (f.gpus_per_node * f.nodes != widest->ranks)
    return error(widest->file, widest->line, std::to_string(widest->ranks) + " ranks do not split evenly over " +
                                                 std::to_string(f.nodes) + " nodes: pass --nodes");
  return f;
}

}  // namespace

double SizeFit::busbw(double us) const {
  return us > 0 ? static_cast<double>(bytes) / us * 1e-3 * nccl_tests_busbw_factor(op, ranks) : 0.0;
}

std::string preset_for_gpu(const std::string& gpu) {
  const std::string g = lower(gpu);
  if (g.find("h100") != std::string::npos) return "dgx-h100";
  if (g.find("h200") != std::string::npos) return "dgx-h200";
  if (g.find("a100") != std::string::npos) return "dgx-a100";
  if (g.find("b200") != std::string::npos) return "hgx-b200";
  return "";
}

std::string constants_version_for(const std::string& release) {
  if (release.empty()) return "";
  if (nccl::constants_for_version(release)) return release;
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) != 2 || major != 2) return "";
  for (int m = minor + 1; m < 100; ++m) {  // an older release: the oldest constants supported
    const std::string v = "2." + std::to_string(m);
    if (nccl::constants_for_version(v)) return v;
  }
  return "";
}

Result<LogCalibrateResult> calibrate_from_nccl_tests(const LogCalibrateSpec& spec) {
  LogCalibrateResult r;
  for (const std::string& file : spec.files) {
    auto t = read_nccl_tests_log(file);
    if (!t.ok()) return t.errors();
    for (NcclTestsTable& x : *t) r.tables.push_back(std::move(x));
  }
  auto samples = samples_of(spec, &r.tables, &r.notes);
  if (!samples.ok()) return samples.errors();
  auto fabric = machine_of(spec, &r);
  if (!fabric.ok()) return fabric.errors();
  r.fabric = *fabric;
  r.options.version = !spec.nccl_version.empty() ? spec.nccl_version : constants_version_for(r.measured_version);
  if (r.options.version.empty()) r.options.version = NcclOptions{}.version;
  // A table run with -g N (one thread driving N GPUs) pays N - 1 serial launches per call.
  for (const NcclTestsTable& t : r.tables)
    r.options.gpus_per_thread = std::max(r.options.gpus_per_thread, t.gpus_per_thread);
  if (r.options.gpus_per_thread > 1)
    r.notes.push_back("the logs ran " + std::to_string(r.options.gpus_per_thread) +
                      " GPUs per thread (nGpus): the model times every call with their serial kernel launches and host floor");
  if (!nccl::constants_for_version(r.options.version))
    return error("--nccl-version", 0, std::string("expected ") + nccl::kSupportedVersions);
  std::vector<CalibrationSample> all;
  for (const Sample& s : *samples) all.push_back(s.s);
  auto fit = fit_nccl(all, r.fabric, r.options);
  if (!fit.ok()) return fit.errors();
  r.calibration.backend = "nccl-tests";
  r.calibration.host = r.hosts.empty() ? "" : r.hosts.front();
  r.calibration.ranks = r.fabric.ranks();
  r.calibration.fits = fit_all(all);
  r.calibration.nccl = *fit;
  auto before = nccl::Model::create(r.fabric, r.options);
  auto after = nccl::Model::create(apply_nccl_figures(*fit, r.fabric), r.options);
  if (!before.ok() || !after.ok()) return error("--nccl-version", 0, "the NCCL model cannot be built");
  for (const Sample& s : *samples) {
    SizeFit z;
    z.op = s.s.op;
    z.ranks = s.s.ranks;
    z.bytes = s.s.bytes;
    z.where = s.where;
    z.measured_us = s.s.time_s * 1e6;
    z.before_us = model_us(*before, z.op, z.bytes, z.ranks, r.fabric.gpus_per_node);
    z.fitted_us = nccl_calibrated_time_s(*fit, *after, z.op, z.bytes, z.ranks) * 1e6;
    r.sizes.push_back(z);
  }
  if (spec.leave_one_out) {
    std::set<int64_t> sizes;
    for (const CalibrationSample& s : all) sizes.insert(s.bytes);
    for (int64_t left : sizes) {
      std::vector<CalibrationSample> rest;
      for (const CalibrationSample& s : all)
        if (s.bytes != left) rest.push_back(s);
      auto partial = fit_nccl(rest, r.fabric, r.options);
      if (!partial.ok()) continue;
      auto m = nccl::Model::create(apply_nccl_figures(*partial, r.fabric), r.options);
      if (!m.ok()) continue;
      for (SizeFit& z : r.sizes)
        if (z.bytes == left) z.loo_us = nccl_calibrated_time_s(*partial, *m, z.op, z.bytes, z.ranks) * 1e6;
    }
  }
  return r;
}

std::optional<Diagnostic> write_size_csv(const LogCalibrateResult& r, const std::string& path) {
  std::ostringstream f;
  {
    f << "op,ranks,bytes,time_us,busbw_GBps,model_us,model_busbw_GBps,fit_us,fit_busbw_GBps,loso_us,loso_busbw_GBps\n";
    char buf[320];
    for (const SizeFit& z : r.sizes) {
      std::snprintf(buf, sizeof buf, "%s,%d,%lld,%.3f,%.4f,%.3f,%.4f,%.3f,%.4f,", nccl_tests_name(z.op), z.ranks,
                    static_cast<long long>(z.bytes), z.measured_us, z.busbw(z.measured_us), z.before_us,
                    z.busbw(z.before_us), z.fitted_us, z.busbw(z.fitted_us));
      f << buf;
      if (z.loo_us) {
        std::snprintf(buf, sizeof buf, "%.3f,%.4f", *z.loo_us, z.busbw(*z.loo_us));
        f << buf;
      } else {
        f << ",";
      }
      f << "\n";
    }
  }
  return write_file_whole(path, f.str(), "per-size CSV");
}

}  // namespace fleetsim::validate
