// The calibration file: load_calibration (located errors) and write_calibration.
#include "sim/model/calibration.h"


#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <yaml-cpp/yaml.h>

#include "fleetsim/file_read.h"

namespace fleetsim {

namespace {

Diagnostic at(const std::string& file, const YAML::Mark& m, std::string msg) {
  Diagnostic d;
  d.loc.file = file;
  if (m.line >= 0) d.loc.line = m.line + 1;
  if (m.column >= 0) d.loc.col = m.column + 1;
  d.message = std::move(msg);
  return d;
}

const char* calib_name(OpKind k) { return k == OpKind::kSend ? "sendrecv" : op_yaml_name(k); }

}  // namespace

Result<Calibration> load_calibration(const std::string& path) {
  Result<std::string> text = read_file_capped(path, kCalibrationFileMax, "calibration file");
  if (!text.ok()) {
    const std::string& why = text.errors().front().message;
    return at(path, YAML::Mark::null_mark(), why.rfind("cannot open", 0) == 0 ? "cannot read calibration file" : why);
  }
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return at(path, e.mark, "invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) return at(path, root.Mark(), "expected a mapping with `fits:`");
  Calibration c;
  std::vector<Diagnostic> errs;
  try {
    if (root["backend"]) c.backend = root["backend"].as<std::string>();
    if (root["host"]) c.host = root["host"].as<std::string>();
    if (root["ranks"]) c.ranks = root["ranks"].as<int>();
    const YAML::Node fits = root["fits"];
    if (!fits || !fits.IsSequence() || fits.size() == 0)
      return at(path, fits ? fits.Mark() : root.Mark(), "expected `fits:` as a non-empty list");
    for (const YAML::Node& n : fits) {
      if (!n.IsMap() || !n["op"] || !n["ranks"] || !n["alpha_us"] || !n["beta_ns_per_byte"]) {
        errs.push_back(at(path, n.Mark(), "a fit needs op, ranks, alpha_us and beta_ns_per_byte"));
        continue;
      }
      CollectiveFit f;
      const auto op = collective_from_name(n["op"].as<std::string>());
      if (!op) {
        errs.push_back(at(path, n["op"].Mark(), "unknown collective '" + n["op"].as<std::string>() +
                                                    "' (expected allreduce, allgather, reducescatter, "
                                                    "broadcast, reduce, alltoall, sendrecv)"));
        continue;
      }
      f.op = *op;
      f.ranks = n["ranks"].as<int>();
      f.fit.alpha_s = n["alpha_us"].as<double>() * 1e-6;
      f.fit.beta_s_per_byte = n["beta_ns_per_byte"].as<double>() * 1e-9;
      if (n["max_rel_err"]) f.max_rel_err = n["max_rel_err"].as<double>();
      if (n["min_bytes"]) f.min_bytes = n["min_bytes"].as<int64_t>();
      if (n["max_bytes"]) f.max_bytes = n["max_bytes"].as<int64_t>();
      if (f.ranks < 1 || f.fit.alpha_s < 0 || f.fit.beta_s_per_byte < 0 || !std::isfinite(f.fit.alpha_s) ||
          !std::isfinite(f.fit.beta_s_per_byte)) {
        errs.push_back(at(path, n.Mark(), "ranks must be >= 1 and alpha_us, beta_ns_per_byte >= 0"));
        continue;
      }
      c.fits.push_back(f);
    }
    if (const YAML::Node n = root["nccl"]) {
      if (!n.IsMap()) return at(path, n.Mark(), "expected `nccl:` as a mapping");
      NcclCalibration nc;
      if (n["system"]) nc.system = n["system"].as<std::string>();
      if (n["nodes"]) nc.nodes = n["nodes"].as<int>();
      if (n["gpus_per_node"]) nc.gpus_per_node = n["gpus_per_node"].as<int>();
      if (n["version"]) nc.version = n["version"].as<std::string>();
      if (n["max_rel_err"]) nc.max_rel_err = n["max_rel_err"].as<double>();
      if (n["samples"]) nc.samples = n["samples"].as<int>();
      if (nc.nodes < 1 || nc.gpus_per_node < 1) errs.push_back(at(path, n.Mark(), "nodes and gpus_per_node must be >= 1"));
      if (!nccl::constants_for_version(nc.version))
        errs.push_back(at(path, n["version"].Mark(), "unknown NCCL version '" + nc.version + "' (expected " +
                                                         nccl::kSupportedVersions + ")"));
      if (const YAML::Node fig = n["figures"]) {
        if (!fig.IsMap()) return at(path, fig.Mark(), "expected `figures:` as a mapping of fabric figures");
        nccl::Fabric probe;
        for (const auto& kv : fig) {
          const std::string key = kv.first.as<std::string>();
          const double v = kv.second.as<double>();
          const bool known = find_fittable_figure(key) != nullptr;
          if (!known || !std::isfinite(v) || v < 0 || !nccl::set_fabric_field(&probe, key, kv.second.as<std::string>()).empty()) {
            std::string names;
            for (const FittableFigure& f : fittable_figures())
              names += std::string(names.empty() ? "" : ", ") + f.key + " (" + f.unit + ")";
            errs.push_back(at(path, kv.first.Mark(), "figure '" + key + "' must be one of " + names +
                                                      ", with a value >= 0"));
            continue;
          }
          nc.figures.emplace_back(key, v);
        }
      }
      if (const YAML::Node off = n["latency_offset_us"]) {
        if (!off.IsMap()) return at(path, off.Mark(), "expected `latency_offset_us:` as a mapping op: microseconds");
        for (const auto& kv : off) {
          const auto op = collective_from_name(kv.first.as<std::string>());
          const double v = kv.second.as<double>();
          if (!op || !std::isfinite(v)) {
            errs.push_back(at(path, kv.first.Mark(), "unknown collective '" + kv.first.as<std::string>() +
                                                         "' or non-finite offset"));
            continue;
          }
          nc.latency_offset_us.emplace_back(*op, v);
        }
      }
      c.nccl = std::move(nc);
    }
  } catch (const YAML::Exception& e) {
    return at(path, e.mark, "bad value: " + e.msg);
  }
  if (!errs.empty()) return errs;
  return c;
}

std::optional<Diagnostic> write_calibration(const Calibration& c, const std::string& path) {
  std::ostringstream f;
  {
    f << "# fleetsim calibration: per collective and group size, T(S) = alpha + beta * S\n"
         "# (S = nccl-tests' bytes; fitted by least squares on relative error).\n";
    f << "backend: " << c.backend << "\nhost: \"" << c.host << "\"\nranks: " << c.ranks << "\nfits:\n";
    char buf[256];
    for (const CollectiveFit& x : c.fits) {
      std::snprintf(buf, sizeof buf,
                    "  - {op: %s, ranks: %d, alpha_us: %.6g, beta_ns_per_byte: %.6g, max_rel_err: %.4f, "
                    "min_bytes: %lld, max_bytes: %lld}\n",
                    calib_name(x.op), x.ranks, x.fit.alpha_s * 1e6, x.fit.beta_s_per_byte * 1e9, x.max_rel_err,
                    static_cast<long long>(x.min_bytes), static_cast<long long>(x.max_bytes));
      f << buf;
    }
    if (c.nccl) {
      const NcclCalibration& n = *c.nccl;
      f << "# The NCCL model's figures fitted to these measurements (applied to the scenario's fleet):\n"
           "# bw_intra, bw_inter, nvls_bw in GB/s per channel, net_latency in us; plus a latency offset per op.\n";
      f << "nccl:\n  system: " << n.system << "\n  nodes: " << n.nodes << "\n  gpus_per_node: " << n.gpus_per_node
        << "\n  version: \"" << n.version << "\"\n  samples: " << n.samples << "\n";
      std::snprintf(buf, sizeof buf, "  max_rel_err: %.4f\n", n.max_rel_err);
      f << buf << "  figures: {";
      for (size_t i = 0; i < n.figures.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%s: %.6g", i ? ", " : "", n.figures[i].first.c_str(), n.figures[i].second);
        f << buf;
      }
      f << "}\n  latency_offset_us: {";
      for (size_t i = 0; i < n.latency_offset_us.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%s: %.6g", i ? ", " : "", calib_name(n.latency_offset_us[i].first),
                      n.latency_offset_us[i].second);
        f << buf;
      }
      f << "}\n";
    }
  }
  return write_file_whole(path, f.str(), "calibration file");
}

}  // namespace fleetsim
