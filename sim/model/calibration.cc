// The alpha-beta fit (weighted least squares with Eigen), the calibration file
// reader/writer, and the CostModel built from measured fits.
#include "sim/model/calibration.h"

#include <unistd.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <yaml-cpp/yaml.h>

namespace fleetsim {

namespace {

constexpr OpKind kCalibratable[] = {OpKind::kAllReduce, OpKind::kAllGather, OpKind::kReduceScatter,
                                    OpKind::kBroadcast, OpKind::kReduce,    OpKind::kAllToAll,
                                    OpKind::kSend};

int ring_steps(OpKind op, int n) {
  n = std::max(n, 2);
  switch (op) {
    case OpKind::kAllReduce: case OpKind::kBarrier: return 2 * (n - 1);
    case OpKind::kSend: case OpKind::kRecv: return 1;
    default: return n - 1;
  }
}

// Solves min sum ((alpha + beta S - T) / T)^2 over the free coefficients.
AlphaBeta solve(const std::vector<CalibrationSample>& s, bool fit_alpha, bool fit_beta) {
  const auto n = static_cast<Eigen::Index>(s.size());
  const int cols = (fit_alpha ? 1 : 0) + (fit_beta ? 1 : 0);
  Eigen::MatrixXd a(n, cols);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const CalibrationSample& x = s[static_cast<size_t>(i)];
    int c = 0;
    if (fit_alpha) a(i, c++) = 1.0 / x.time_s;
    if (fit_beta) a(i, c) = static_cast<double>(x.bytes) / x.time_s;
  }
  const Eigen::VectorXd v = a.colPivHouseholderQr().solve(b);
  AlphaBeta f;
  int c = 0;
  if (fit_alpha) f.alpha_s = v(c++);
  if (fit_beta) f.beta_s_per_byte = v(c);
  return f;
}

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

std::optional<OpKind> collective_from_name(const std::string& name) {
  if (name == "sendrecv" || name == "send") return OpKind::kSend;
  for (OpKind k : kCalibratable)
    if (name == op_yaml_name(k)) return k;
  return std::nullopt;
}

const CollectiveFit* Calibration::find(OpKind op, int n) const {
  const CollectiveFit* best = nullptr;
  for (const CollectiveFit& f : fits) {
    if (f.op != op) continue;
    if (!best || std::abs(f.ranks - n) < std::abs(best->ranks - n)) best = &f;
  }
  return best;
}

AlphaBeta fit_alpha_beta(const std::vector<CalibrationSample>& samples) {
  FLEETSIM_CHECK(!samples.empty());
  AlphaBeta f = solve(samples, true, true);
  if (f.alpha_s < 0) f = solve(samples, false, true);
  else if (f.beta_s_per_byte < 0) f = solve(samples, true, false);
  f.alpha_s = std::max(0.0, f.alpha_s);
  f.beta_s_per_byte = std::max(0.0, f.beta_s_per_byte);
  return f;
}

std::vector<CollectiveFit> fit_all(const std::vector<CalibrationSample>& samples) {
  std::map<std::pair<int, int>, std::vector<CalibrationSample>> groups;
  for (const CalibrationSample& s : samples)
    if (s.time_s > 0) groups[{static_cast<int>(s.op), s.ranks}].push_back(s);
  std::vector<CollectiveFit> out;
  for (const auto& [key, g] : groups) {
    CollectiveFit f;
    f.op = static_cast<OpKind>(key.first);
    f.ranks = key.second;
    f.fit = fit_alpha_beta(g);
    f.min_bytes = INT64_MAX;
    for (const CalibrationSample& s : g) {
      f.max_rel_err = std::max(f.max_rel_err, std::abs(f.fit.time_s(s.bytes) - s.time_s) / s.time_s);
      f.min_bytes = std::min(f.min_bytes, s.bytes);
      f.max_bytes = std::max(f.max_bytes, s.bytes);
    }
    out.push_back(f);
  }
  return out;
}

Result<Calibration> load_calibration(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return at(path, YAML::Mark::null_mark(), "cannot read calibration file");
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
  } catch (const YAML::Exception& e) {
    return at(path, e.mark, "bad value: " + e.msg);
  }
  if (!errs.empty()) return errs;
  return c;
}

std::optional<Diagnostic> write_calibration(const Calibration& c, const std::string& path) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
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
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return at(path, YAML::Mark::null_mark(), "cannot write calibration file");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return at(path, YAML::Mark::null_mark(), "cannot write calibration file: " + ec.message());
  return std::nullopt;
}

namespace {

class CalibratedModel final : public CostModel {
 public:
  explicit CalibratedModel(Calibration c) : c_(std::move(c)) {}

  Duration collective_time(OpKind op, int64_t bytes, const GroupShape& g) const override {
    OpKind key = op == OpKind::kRecv ? OpKind::kSend : op;
    if (op == OpKind::kBarrier) bytes = 4;
    const CollectiveFit* f = c_.find(key, g.ranks);
    if (!f) {
      key = OpKind::kAllReduce;
      f = c_.find(key, g.ranks);
    }
    if (!f) f = &c_.fits.front();
    if (f->ranks == g.ranks || key == OpKind::kSend) return round_to_duration(f->fit.time_s(bytes));
    const double steps = static_cast<double>(ring_steps(key, g.ranks)) / ring_steps(key, f->ranks);
    const double sent_at_fit = ring_bytes_sent_per_rank(key, 1 << 20, f->ranks);
    const double per_byte = sent_at_fit > 0 ? ring_bytes_sent_per_rank(key, 1 << 20, g.ranks) / sent_at_fit : 0.0;
    if (g.ranks <= 1) return round_to_duration(f->fit.alpha_s / ring_steps(key, f->ranks));
    return round_to_duration(f->fit.alpha_s * steps + f->fit.beta_s_per_byte * per_byte * static_cast<double>(bytes));
  }

  const char* name() const override { return "calibrated alpha-beta"; }

 private:
  Calibration c_;
};

}  // namespace

std::unique_ptr<CostModel> make_calibrated_model(const Calibration& c, const Fleet& /*fleet*/) {
  FLEETSIM_CHECK(!c.fits.empty());
  return std::make_unique<CalibratedModel>(c);
}

}  // namespace fleetsim
