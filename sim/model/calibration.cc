// The alpha-beta fit (weighted least squares with Eigen), the NCCL figure fit,
// and the CostModel built from measured fits (the file: calibration_file.cc).
#include "sim/model/calibration.h"

#include <unistd.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <yaml-cpp/yaml.h>

#include "fleetsim/file_read.h"

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

double NcclCalibration::offset_us(OpKind op) const {
  const OpKind key = op == OpKind::kRecv ? OpKind::kSend : op == OpKind::kBarrier ? OpKind::kAllReduce : op;
  for (const auto& [k, v] : latency_offset_us)
    if (k == key) return v;
  return 0.0;
}

GroupShape sweep_group_shape(int ranks, int gpus_per_node) {
  const int per = std::max(1, gpus_per_node);
  GroupShape g;
  g.ranks = std::max(1, ranks);
  g.nodes = (g.ranks + per - 1) / per;
  g.ranks_per_node = std::min(g.ranks, per);
  return g;
}

nccl::Fabric apply_nccl_figures(const NcclCalibration& c, nccl::Fabric fabric) {
  char buf[64];
  for (const auto& [key, value] : c.figures) {
    std::snprintf(buf, sizeof buf, "%.9g", value);
    nccl::set_fabric_field(&fabric, key, buf);
  }
  return fabric;
}

namespace {

double model_us(const nccl::Model& m, OpKind op, int64_t bytes, int ranks, int gpus_per_node) {
  const auto coll = nccl::coll_from_op(op);
  if (!coll) return 0.0;
  const nccl::Estimate e = m.estimate(*coll, op == OpKind::kBarrier ? 4 : bytes, sweep_group_shape(ranks, gpus_per_node));
  return e.ok ? e.time_us : 0.0;
}

// One fabric figure being fitted: its set_fabric_field key and search range.
struct Param {
  std::string key;
  double value, lo, hi;
  bool log_scale;
};

class NcclFit {
 public:
  NcclFit(const std::vector<CalibrationSample>& s, const nccl::Fabric& f, const nccl::Options& o)
      : samples_(s), fabric_(f), options_(o) {
    for (const CalibrationSample& x : s)
      if (std::find(ops_.begin(), ops_.end(), key_of(x.op)) == ops_.end()) ops_.push_back(key_of(x.op));
  }

  static OpKind key_of(OpKind op) { return op == OpKind::kRecv ? OpKind::kSend : op; }

  nccl::Fabric fabric_with(const std::vector<Param>& p) const {
    nccl::Fabric f = fabric_;
    char buf[64];
    for (const Param& x : p) {
      std::snprintf(buf, sizeof buf, "%.9g", x.value);
      nccl::set_fabric_field(&f, x.key, buf);
    }
    return f;
  }

  // Sum of squared relative errors with the best offsets; fills `offsets`.
  double objective(const std::vector<Param>& p, std::vector<double>* offsets = nullptr,
                   double* max_err = nullptr) const {
    auto m = nccl::Model::create(fabric_with(p), options_);
    if (!m.ok()) return std::numeric_limits<double>::infinity();
    std::vector<double> pred(samples_.size());
    for (size_t i = 0; i < samples_.size(); ++i)
      pred[i] = model_us(*m, samples_[i].op, samples_[i].bytes, samples_[i].ranks, fabric_.gpus_per_node);
    double total = 0, worst = 0;
    std::vector<double> offs;
    for (OpKind op : ops_) {
      // min sum ((m + d - t) / t)^2 over d: d = sum((t - m) / t^2) / sum(1 / t^2),
      // kept above -min(m) so that no prediction goes below zero.
      double num = 0, den = 0, floor = std::numeric_limits<double>::infinity();
      for (size_t i = 0; i < samples_.size(); ++i) {
        if (key_of(samples_[i].op) != op) continue;
        const double t = samples_[i].time_s * 1e6;
        num += (t - pred[i]) / (t * t);
        den += 1.0 / (t * t);
        floor = std::min(floor, pred[i]);
      }
      const double d = std::max(den > 0 ? num / den : 0.0, -0.95 * floor);
      offs.push_back(d);
      for (size_t i = 0; i < samples_.size(); ++i) {
        if (key_of(samples_[i].op) != op) continue;
        const double t = samples_[i].time_s * 1e6;
        const double r = (pred[i] + d - t) / t;
        total += r * r;
        worst = std::max(worst, std::abs(r));
      }
    }
    if (offsets) *offsets = offs;
    if (max_err) *max_err = worst;
    return total;
  }

  // Does the objective move when `p` is halved or doubled?
  bool sensitive(std::vector<Param> p, size_t i) const {
    const double base = objective(p);
    for (double k : {0.5, 2.0}) {
      std::vector<Param> q = p;
      q[i].value = p[i].log_scale ? p[i].value * k : p[i].value + (k > 1 ? 5.0 : 2.5);
      if (std::abs(objective(q) - base) > 1e-9 * std::max(1.0, base)) return true;
    }
    return false;
  }

  // One coordinate: a 41-point grid over the range, then golden-section search
  // between the grid neighbours of the best point.
  void minimize(std::vector<Param>& p, size_t i) const {
    Param& x = p[i];
    auto at = [&](double u) {
      x.value = x.log_scale ? std::exp(u) : u;
      return objective(p);
    };
    const double lo = x.log_scale ? std::log(x.lo) : x.lo, hi = x.log_scale ? std::log(x.hi) : x.hi;
    constexpr int kGrid = 40;
    double best_u = lo, best = std::numeric_limits<double>::infinity();
    for (int k = 0; k <= kGrid; ++k) {
      const double u = lo + (hi - lo) * k / kGrid;
      const double v = at(u);
      if (v < best) best = v, best_u = u;
    }
    double a = std::max(lo, best_u - (hi - lo) / kGrid), b = std::min(hi, best_u + (hi - lo) / kGrid);
    const double g = (std::sqrt(5.0) - 1) / 2;
    double c = b - g * (b - a), d = a + g * (b - a), fc = at(c), fd = at(d);
    for (int it = 0; it < 60 && b - a > 1e-7 * (1 + std::abs(a)); ++it) {
      if (fc < fd) {
        b = d, d = c, fd = fc, c = b - g * (b - a), fc = at(c);
      } else {
        a = c, c = d, fc = fd, d = a + g * (b - a), fd = at(d);
      }
    }
    const double u = fc < fd ? c : d;
    if (std::min(fc, fd) <= best) {
      at(u);
    } else {
      at(best_u);
    }
  }

  const std::vector<OpKind>& ops() const { return ops_; }

 private:
  const std::vector<CalibrationSample>& samples_;
  nccl::Fabric fabric_;
  nccl::Options options_;
  std::vector<OpKind> ops_;
};

}  // namespace

namespace {

double ring_intra(const nccl::Fabric&, const nccl::Graphs& one, const nccl::Graphs&) { return one.ring.bw_intra_GBps; }
double ring_inter(const nccl::Fabric&, const nccl::Graphs&, const nccl::Graphs& all) { return all.ring.bw_inter_GBps; }
double nvls_intra(const nccl::Fabric& f, const nccl::Graphs& one, const nccl::Graphs&) {
  return f.nvls ? one.nvls.bw_intra_GBps : 0.0;
}
double net_latency(const nccl::Fabric& f, const nccl::Graphs&, const nccl::Graphs&) {
  return std::max(0.0, f.net_latency_us);
}

}  // namespace

const std::vector<FittableFigure>& fittable_figures() {
  static const std::vector<FittableFigure> figures = {
      {"bw_intra", "GB/s per channel", false, true, 0, 0, ring_intra},
      {"bw_inter", "GB/s per channel", true, true, 0, 0, ring_inter},
      {"nvls_bw", "GB/s per channel", false, true, 0, 0, nvls_intra},
      {"net_latency", "us", true, false, 0.0, 100.0, net_latency},
  };
  return figures;
}

const FittableFigure* find_fittable_figure(std::string_view key) {
  for (const FittableFigure& f : fittable_figures())
    if (key == f.key) return &f;
  return nullptr;
}

double figure_before_fit(const FittableFigure& fig, const nccl::Fabric& fabric, int widest_ranks) {
  const int widest = std::max(1, widest_ranks);
  const GroupShape one = sweep_group_shape(std::min(widest, fabric.gpus_per_node), fabric.gpus_per_node);
  const GroupShape many = sweep_group_shape(widest, fabric.gpus_per_node);
  return fig.before(fabric, nccl::nccl_graphs(fabric, one), nccl::nccl_graphs(fabric, many));
}

double nccl_calibrated_time_s(const NcclCalibration& c, const nccl::Model& fitted, OpKind op, int64_t bytes,
                              int ranks) {
  return std::max(0.0, model_us(fitted, op, bytes, ranks, c.gpus_per_node) + c.offset_us(op)) * 1e-6;
}

Result<NcclCalibration> fit_nccl(const std::vector<CalibrationSample>& all, const nccl::Fabric& fabric,
                                 const nccl::Options& options) {
  std::vector<CalibrationSample> samples;
  for (const CalibrationSample& s : all)
    if (s.ranks >= 2 && s.time_s > 0 && nccl::coll_from_op(s.op)) samples.push_back(s);
  if (samples.empty()) {
    Diagnostic d;
    d.message = "no samples of groups of 2 or more GPUs to fit the NCCL model to";
    return d;
  }
  auto check = nccl::Model::create(fabric, options);
  if (!check.ok()) return check.errors();
  int widest = 0;
  for (const CalibrationSample& s : samples) widest = std::max(widest, s.ranks);
  const GroupShape one = sweep_group_shape(std::min(widest, fabric.gpus_per_node), fabric.gpus_per_node);
  const GroupShape many = sweep_group_shape(widest, fabric.gpus_per_node);
  const nccl::Graphs g1 = nccl::nccl_graphs(fabric, one), gn = nccl::nccl_graphs(fabric, many);
  std::vector<Param> params;
  for (const FittableFigure& fig : fittable_figures()) {
    if (fig.multi_node && many.nodes <= 1) continue;
    const double v = fig.before(fabric, g1, gn);
    if (fig.log_scale && v > 0) params.push_back({fig.key, v, v / 16, v * 16, true});
    if (!fig.log_scale) params.push_back({fig.key, std::clamp(v, fig.lo, fig.hi), fig.lo, fig.hi, false});
  }
  NcclFit fit(samples, fabric, options);
  // Coordinate descent over the figures in `set` until the objective stops falling.
  auto refine = [&fit](std::vector<Param>& set) {
    double prev = fit.objective(set);
    for (int round = 0; round < 6 && !set.empty(); ++round) {
      for (size_t i = 0; i < set.size(); ++i) fit.minimize(set, i);
      const double now = fit.objective(set);
      if (prev - now <= 1e-10 * std::max(1.0, prev)) break;
      prev = now;
    }
    return fit.objective(set);
  };
  // Forward selection: a figure left unset keeps its derived value, which may
  // differ between group shapes (bw_intra is a one-node ring's figure and a
  // multi-node tree's), so a figure is set only when setting it lowers the
  // error by more than 5%: the one that helps most first, then all refitted.
  std::vector<Param> used, left;
  for (size_t i = 0; i < params.size(); ++i)
    if (fit.sensitive(params, i)) left.push_back(params[i]);
  double best = fit.objective(used);
  while (!left.empty()) {
    size_t pick = left.size();
    double pick_obj = best;
    std::vector<Param> pick_set;
    for (size_t i = 0; i < left.size(); ++i) {
      std::vector<Param> trial = used;
      trial.push_back(left[i]);
      const double v = refine(trial);
      if (v < pick_obj) pick = i, pick_obj = v, pick_set = trial;
    }
    if (pick == left.size() || pick_obj > 0.95 * best) break;
    used = pick_set;
    best = pick_obj;
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(pick));
  }
  NcclCalibration c;
  c.system = fabric.system;
  c.nodes = fabric.nodes;
  c.gpus_per_node = fabric.gpus_per_node;
  c.version = options.version;
  c.samples = static_cast<int>(samples.size());
  for (const Param& p : used) c.figures.emplace_back(p.key, p.value);
  std::vector<double> offsets;
  fit.objective(used, &offsets, &c.max_rel_err);
  for (size_t i = 0; i < fit.ops().size(); ++i) c.latency_offset_us.emplace_back(fit.ops()[i], offsets[i]);
  return c;
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

// NCCL's model with fitted figures, plus the fitted latency offset per op.
class NcclCalibratedModel final : public CostModel {
 public:
  NcclCalibratedModel(NcclCalibration c, std::unique_ptr<CostModel> inner)
      : c_(std::move(c)), inner_(std::move(inner)), name_(std::string(inner_->name()) + ", calibrated figures") {}

  Duration collective_time(OpKind op, int64_t bytes, const GroupShape& g) const override {
    return shift(op, g, inner_->collective_time(op, bytes, g));
  }
  Duration collective_time_degraded(OpKind op, int64_t bytes, const GroupShape& g,
                                    const std::vector<LinkDegradation>& degraded) const override {
    return shift(op, g, inner_->collective_time_degraded(op, bytes, g, degraded));
  }
  const char* name() const override { return name_.c_str(); }

 private:
  Duration shift(OpKind op, const GroupShape& g, Duration t) const {
    if (g.ranks <= 1) return t;  // a one-member group was never measured
    return round_to_duration(std::max(0.0, t.to_seconds() + c_.offset_us(op) * 1e-6));
  }
  NcclCalibration c_;
  std::unique_ptr<CostModel> inner_;
  std::string name_;
};

}  // namespace

std::unique_ptr<CostModel> make_calibrated_model(const Calibration& c, const Fleet& fleet, const std::string& algo,
                                                 const std::string& proto) {
  FLEETSIM_CHECK(!c.fits.empty());
  if (c.nccl) {
    NcclOptions o;
    o.version = c.nccl->version;
    o.algo = algo;
    o.proto = proto;
    auto inner = make_nccl_model(apply_nccl_figures(*c.nccl, fabric_from_fleet(fleet)), o);
    if (inner) return std::make_unique<NcclCalibratedModel>(*c.nccl, std::move(inner));
  }
  return std::make_unique<CalibratedModel>(c);
}

}  // namespace fleetsim
