// The NCCL model as a whole: option parsing (NCCL_ALGO/NCCL_PROTO syntax),
// selection on healthy or degraded graphs, the α-β point-to-point model for
// alltoall and send/recv, and the fleetsim::CostModel adapter the engine uses.
// Formulas: docs/collectives.md ("The model"; busbw factors as nccl-tests computes them).
#include "sim/model/nccl_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

namespace fleetsim::nccl {
namespace {

constexpr uint32_t kAllAlgos = (1u << kNumAlgos) - 1;
constexpr uint32_t kAllProtos = (1u << kNumProtos) - 1;
constexpr int64_t kP2pLLThreshold = 16384;  // bytes per peer up to which P2P uses LL

std::string norm(std::string_view s) {  // lower case, '_' and '-' dropped
  std::string out;
  for (char ch : s) {
    if (ch == '_' || ch == '-' || ch == ' ') continue;
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return out;
}

// Shared NCCL_ALGO/NCCL_PROTO list parser: "a,b" enables only those, "^a,b"
// disables them. `lookup` maps a normalized name to a bit mask (0 = unknown).
Diagnostic error(std::string message) {  // built field by field: GCC 12 warns on Diagnostic{{}, ...}
  Diagnostic d;
  d.message = std::move(message);
  return d;
}

template <typename Lookup>
std::string parse_list(std::string_view text, uint32_t all, uint32_t* mask, const char* what,
                       const char* expected, Lookup lookup) {
  if (text.empty()) { *mask = all; return ""; }
  const bool exclude = text.front() == '^';
  if (exclude) text.remove_prefix(1);
  uint32_t bits = 0;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const uint32_t b = lookup(norm(item));
    if (b == 0) {
      return std::string("unknown ") + what + " '" + std::string(item) + "' (expected a comma list of " +
             expected + ", optionally starting with ^ to exclude)";
    }
    bits |= b;
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  *mask = exclude ? (all & ~bits) : bits;
  return "";
}

}  // namespace

const char* coll_name(Coll c) {
  switch (c) {
    case Coll::kAllReduce: return "allreduce";
    case Coll::kAllGather: return "allgather";
    case Coll::kReduceScatter: return "reducescatter";
    case Coll::kBroadcast: return "broadcast";
    case Coll::kReduce: return "reduce";
    case Coll::kAllToAll: return "alltoall";
    case Coll::kSendRecv: return "sendrecv";
  }
  return "?";
}

std::optional<Coll> coll_from_name(std::string_view name) {
  const std::string n = norm(name);
  for (int i = 0; i <= static_cast<int>(Coll::kSendRecv); ++i) {
    if (n == coll_name(static_cast<Coll>(i))) return static_cast<Coll>(i);
  }
  if (n == "bcast") return Coll::kBroadcast;
  if (n == "send" || n == "recv") return Coll::kSendRecv;
  return std::nullopt;
}

std::optional<Coll> coll_from_op(OpKind op) {
  switch (op) {
    case OpKind::kAllReduce: case OpKind::kBarrier: return Coll::kAllReduce;
    case OpKind::kAllGather: return Coll::kAllGather;
    case OpKind::kReduceScatter: return Coll::kReduceScatter;
    case OpKind::kBroadcast: return Coll::kBroadcast;
    case OpKind::kReduce: return Coll::kReduce;
    case OpKind::kAllToAll: return Coll::kAllToAll;
    case OpKind::kSend: case OpKind::kRecv: return Coll::kSendRecv;
    default: return std::nullopt;
  }
}

std::string parse_algo_list(std::string_view text, uint32_t* mask) {
  return parse_list(text, kAllAlgos, mask, "algorithm",
                    "tree, ring, collnetdirect, collnetchain, collnet, nvls, nvlstree, pat",
                    [](const std::string& n) -> uint32_t {
                      if (n == "tree") return 1u << 0;
                      if (n == "ring") return 1u << 1;
                      if (n == "collnetdirect") return 1u << 2;
                      if (n == "collnetchain") return 1u << 3;
                      if (n == "collnet") return (1u << 2) | (1u << 3);
                      if (n == "nvls") return 1u << 4;
                      if (n == "nvlstree") return 1u << 5;
                      if (n == "pat") return 1u << 6;
                      return 0;
                    });
}

std::string parse_proto_list(std::string_view text, uint32_t* mask) {
  return parse_list(text, kAllProtos, mask, "protocol", "ll, ll128, simple",
                    [](const std::string& n) -> uint32_t {
                      if (n == "ll") return 1u << 0;
                      if (n == "ll128") return 1u << 1;
                      if (n == "simple") return 1u << 2;
                      return 0;
                    });
}

double busbw_factor(Coll coll, int ranks) {
  const double n = ranks;
  switch (coll) {
    case Coll::kAllReduce: return 2 * (n - 1) / n;
    case Coll::kAllGather: case Coll::kReduceScatter: case Coll::kAllToAll: return (n - 1) / n;
    default: return 1.0;
  }
}

Estimate p2p_estimate(const Fabric& f, const Graphs& g, const Constants& c, Coll coll, int64_t bytes,
                      const GroupShape& s) {
  const bool net = s.nodes > 1;
  const int hw = net ? 2 : (f.nvlink_bandwidth_GBps > 0 ? 0 : 1);
  const int64_t per_peer = coll == Coll::kAllToAll ? bytes / std::max(1, s.ranks) : bytes;
  const Proto proto = per_peer <= kP2pLLThreshold ? Proto::kLL : Proto::kSimple;
  const int p = static_cast<int>(proto);
  const double hop_extra = net ? f.net_hop_extra_us : f.nvlink_hop_extra_us;
  const double alpha = c.base_lat_us[1][p] + std::max(0.0, c.hw_lat_us[hw][1][p] + hop_extra) +
                       (net ? f.net_latency_us : 0.0);
  const double ll = proto == Proto::kLL ? 0.5 : 1.0;  // LL carries 4 B of data per 8 B
  const Graph& intra_graph = net ? g.tree : g.ring;   // multi-node tree graph keeps the NVLink figure
  const double b_nvl = ll * intra_graph.channels * intra_graph.bw_intra_GBps;
  const double b_net = net ? ll * g.ring.channels * g.ring.bw_inter_GBps / std::max(1, s.ranks_per_node)
                           : std::numeric_limits<double>::infinity();
  double beta_us = 0;
  const double S = static_cast<double>(bytes);
  if (coll == Coll::kSendRecv) {
    beta_us = S / (1000.0 * (net ? b_net : b_nvl));
  } else {
    const double n = std::max(1, s.ranks), ppn = s.ranks_per_node;
    const double leaf = std::max(1, f.nodes_per_leaf);
    const double cross = s.nodes > leaf ? (s.nodes - leaf) / (s.nodes - 1) : 0.0;
    const double oversub = std::max(1.0, f.oversubscription * cross);
    const double t_nvl = S * (ppn - 1) / n / (1000.0 * b_nvl);
    const double t_net = net ? S * (n - ppn) / n * oversub / (1000.0 * b_net) : 0.0;
    beta_us = std::max(t_nvl, t_net);
  }
  Estimate e;
  e.ok = true;
  e.algo = Algo::kP2p;
  e.proto = proto;
  e.lat_us = alpha;
  e.time_us = alpha + beta_us;
  e.bw_GBps = beta_us > 0 ? S / (1000.0 * beta_us) : 0.0;
  return e;
}

Result<Model> Model::create(const Fabric& fabric, const Options& options) {
  auto c = constants_for_version(options.version);
  if (!c) {
    return error("unknown NCCL version '" + options.version + "' (expected " + kSupportedVersions + ")");
  }
  uint32_t algo_mask = 0, proto_mask = 0;
  if (std::string e = parse_algo_list(options.algo, &algo_mask); !e.empty()) return error(e);
  if (std::string e = parse_proto_list(options.proto, &proto_mask); !e.empty()) return error(e);
  if (fabric.nodes < 1 || fabric.gpus_per_node < 1 || fabric.nics_per_node < 1) {
    return error("fabric needs nodes, gpus_per_node and nics_per_node >= 1");
  }
  if (options.timing != "exec" && options.timing != "tuning") {
    return error("unknown timing '" + options.timing + "' (expected exec or tuning)");
  }
  if (options.gpus_per_thread < 1) return error("gpus per thread must be >= 1");
  return Model(fabric, std::move(*c), algo_mask, proto_mask, options.timing == "exec", options.gpus_per_thread);
}

GroupShape Model::full_shape() const {
  return GroupShape{fabric_.ranks(), fabric_.nodes, fabric_.gpus_per_node};
}

Table Model::table(Coll coll, const GroupShape& shape) const {
  Table t = tuning_table(fabric_, nccl_graphs(fabric_, shape), constants_, coll, shape);
  apply_masks(&t, algo_mask_, proto_mask_);
  return t;
}

Estimate Model::estimate_on(const Graphs& g, Coll coll, int64_t bytes, const GroupShape& s,
                            const Estimate* forced) const {
  if (s.ranks <= 1) {  // a one-member group: only the launch
    Estimate e;
    e.ok = true;
    e.algo = Algo::kRing;
    e.proto = Proto::kLL;
    e.lat_us = e.time_us = constants_.base_lat_us[1][0];
    return e;
  }
  if (coll == Coll::kAllToAll || coll == Coll::kSendRecv) {
    Estimate e = p2p_estimate(fabric_, g, constants_, coll, bytes, s);
    if (exec_timing_ && coll == Coll::kAllToAll && e.proto == Proto::kSimple) {
      // NCCL's plan gives each peer a few of the P2P channels (execution timing).
      const double share = alltoall_channel_share(fabric_, g, fabric_.exec, bytes, s);
      e.time_us = e.lat_us + (e.time_us - e.lat_us) / share;
      e.bw_GBps *= share;
    }
    return e;
  }
  Table t = tuning_table(fabric_, g, constants_, coll, s);
  if (forced == nullptr) {
    apply_masks(&t, algo_mask_, proto_mask_);
    Estimate e = select(t, fabric_, g, constants_, coll, bytes, s);
    time_choice(t, g, coll, bytes, s, &e);
    return e;
  }
  Estimate e = *forced;
  const double time = algo_time_us(t, fabric_, g, constants_, coll, e.algo, e.proto, bytes, s);
  e.ok = time >= 0;
  e.time_us = time;
  e.lat_us = t.lat_us[static_cast<int>(e.algo)][static_cast<int>(e.proto)];
  e.bw_GBps = time > e.lat_us ? static_cast<double>(bytes) / (1000.0 * (time - e.lat_us)) : 0.0;
  time_choice(t, g, coll, bytes, s, &e);
  return e;
}

void Model::time_choice(const Table& t, const Graphs& g, Coll coll, int64_t bytes, const GroupShape& s,
                        Estimate* e) const {
  if (!e->ok) return;
  e->tuning_us = e->time_us;
  if (!exec_timing_) return;
  const double time = exec_time_us(t, fabric_, g, constants_, fabric_.exec, coll, e->algo, e->proto, bytes, s,
                                   gpus_per_thread_);
  if (time >= 0) e->time_us = time;
}

Estimate Model::estimate(Coll coll, int64_t bytes, const GroupShape& shape) const {
  return estimate_on(nccl_graphs(fabric_, shape), coll, bytes, shape, nullptr);
}

Estimate Model::estimate_degraded(Coll coll, int64_t bytes, const GroupShape& shape,
                                  const std::vector<LinkDegradation>& degradations) const {
  const Estimate healthy = estimate(coll, bytes, shape);
  if (!healthy.ok) return healthy;
  const Graphs g = degraded_graphs(fabric_, shape, degradations);
  if (healthy.algo == Algo::kP2p || shape.ranks <= 1) return estimate_on(g, coll, bytes, shape, nullptr);
  return estimate_on(g, coll, bytes, shape, &healthy);
}

namespace {

// The engine's view: Duration per (op, bytes, group shape). Stateless apart
// from the immutable TunedModel.
class NcclCostModel final : public CostModel {
 public:
  explicit NcclCostModel(TunedModel tuned)
      : tuned_(std::move(tuned)), name_("nccl " + tuned_.masked().constants().version + " tuning model") {}

  Duration collective_time(OpKind op, int64_t bytes, const GroupShape& shape) const override {
    return collective_time_degraded(op, bytes, shape, {});
  }

  Duration collective_time_degraded(OpKind op, int64_t bytes, const GroupShape& shape,
                                    const std::vector<LinkDegradation>& degraded) const override {
    const auto coll = coll_from_op(op);
    FLEETSIM_CHECK(coll.has_value());
    FLEETSIM_DCHECK(bytes >= 0 && shape.ranks >= 1);
    const Estimate e = tuned_.estimate(*coll, TunedModel::op_bytes(op, bytes), TunedModel::normalized(shape), degraded);
    return round_to_duration(e.time_us * 1e-6);
  }

  const char* name() const override { return name_.c_str(); }

 private:
  TunedModel tuned_;
  std::string name_;
};

}  // namespace

std::optional<TunedModel> TunedModel::create(const Fabric& fabric, const Options& options) {
  auto m = Model::create(fabric, options);
  Options plain = options;
  plain.algo.clear();
  plain.proto.clear();
  auto u = Model::create(fabric, plain);
  if (!m.ok() || !u.ok()) return std::nullopt;
  return TunedModel(std::move(*m), std::move(*u));
}

GroupShape TunedModel::normalized(const GroupShape& shape) {
  GroupShape s = shape;
  s.nodes = std::max(1, s.nodes);
  s.ranks_per_node = std::clamp(s.ranks_per_node, 1, std::max(1, s.ranks));
  return s;
}

Estimate TunedModel::estimate(Coll coll, int64_t bytes, const GroupShape& s,
                              const std::vector<LinkDegradation>& degraded) const {
  if (degraded.empty()) {
    const Estimate e = masked_.estimate(coll, bytes, s);
    return e.ok ? e : unmasked_.estimate(coll, bytes, s);
  }
  const Estimate e = masked_.estimate_degraded(coll, bytes, s, degraded);
  return e.ok ? e : unmasked_.estimate_degraded(coll, bytes, s, degraded);
}

std::unique_ptr<CostModel> make_nccl_model(const Fabric& fabric, const Options& options) {
  auto tuned = TunedModel::create(fabric, options);
  if (!tuned) return nullptr;
  return std::make_unique<NcclCostModel>(std::move(*tuned));
}

}  // namespace fleetsim::nccl
