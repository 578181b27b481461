// The step-level ring model: the schedule of one collective (NCCL's chunking,
// loop order, receive buffers and per-hop rates; ring_steps_paths.cc evaluates
// its longest paths), and the CostModel that caches each collective's spans per
// (collective, size, group shape, degradations), so that a call costs
// O(members): completion = max_i (arrival_i + span_i). docs/collectives.md
// ("The step model").
#include "sim/model/ring_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace fleetsim::nccl {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();
constexpr int kRingAlgo = static_cast<int>(Algo::kRing);
constexpr int kNcclSteps = 8;  // NCCL_STEPS: buffer slots a connection (src/include/device.h)

// NCCL's per-step buffer payload per protocol (reference §1.6): Simple 512 KiB
// (4 MiB buffer / 8 steps); LL 32 KiB (a 64 KiB step carries 4 B of data per 8 B);
// LL128 576,000 B (614,400 B of 128-byte lines with 120 B of data each).
double step_payload_bytes(Proto p) {
  switch (p) {
    case Proto::kLL: return 32768.0;
    case Proto::kLL128: return 576000.0;
    case Proto::kSimple: return 524288.0;
  }
  return 524288.0;
}

// The unit a ring step streams in: a Simple slice is 2 buffer steps (1 MiB);
// LL/LL128 move one step at a time. Chains (broadcast/reduce) move one step.
double chunk_bytes(Proto p, bool ring) {
  return (ring && p == Proto::kSimple ? 2.0 : 1.0) * step_payload_bytes(p);
}

// NCCL's nsteps for the bus -> algorithm bandwidth ratio (tuning.cc).
int nccl_nsteps(Coll c, int n) {
  switch (c) {
    case Coll::kAllReduce: return 2 * (n - 1);
    case Coll::kAllGather: case Coll::kReduceScatter: return n - 1;
    default: return n;
  }
}

// NICs serving the group's members on one node (as nccl_fabric.cc counts them).
int nics_used(const Fabric& f, const GroupShape& s) {
  const int per = std::max(1, f.gpus_per_nic);
  return std::clamp((s.ranks_per_node + per - 1) / per, 1, std::max(1, f.nics_per_node));
}

// Whether degradation `d` touches hop a -> b of `channel`. Members sit node by
// node, ranks_per_node to a node; channel ch leaves and enters nodes through NIC
// slot ch mod nics (channels are spread over the NICs, two per NIC by default).
bool touches(const LinkDegradation& d, int a, int b, int channel, const GroupShape& s, int nics) {
  const int ppn = std::max(1, s.ranks_per_node);
  const int na = a / ppn, nb = b / ppn;
  const bool inter = na != nb;
  const bool on_node = na == d.node || nb == d.node;
  switch (d.kind) {
    case DegradeKind::kNicRate:
    case DegradeKind::kRemoteNuma:
      return inter && on_node && d.index == channel % nics;
    case DegradeKind::kGpuDirectOff:
      return inter && on_node;
    case DegradeKind::kNvlinkRate:
      return !inter && na == d.node && (a % ppn == d.index || b % ppn == d.index);
  }
  return false;
}

}  // namespace

int64_t StepSchedule::transfers() const {
  return int64_t{kind == Kind::kRing ? steps : 1} * (kind == Kind::kRing ? ranks : ranks - 1) * chunks;
}

StepSchedule ring_schedule(const Model& model, const StepRequest& req, Proto proto) {
  const Fabric& f = model.fabric();
  const Constants& k = model.constants();
  const GroupShape& s = req.shape;
  const int n = s.ranks;
  FLEETSIM_CHECK(n >= 2);
  const bool ring = req.coll == Coll::kAllReduce || req.coll == Coll::kAllGather ||
                    req.coll == Coll::kReduceScatter;
  FLEETSIM_CHECK(ring || req.coll == Coll::kBroadcast || req.coll == Coll::kReduce);
  const int p = static_cast<int>(proto);

  StepSchedule out;
  out.kind = ring ? StepSchedule::Kind::kRing : StepSchedule::Kind::kChain;
  out.ranks = n;
  out.steps = ring ? nccl_nsteps(req.coll, n) : 1;
  // NCCL's ring: a loop's chunk is CHUNKSTEPS (4) buffer steps of Simple, sent as
  // slices of SLICESTEPS (2), so 2 of the model's chunks a loop and NCCL_STEPS/2 = 4
  // slices a connection; LL and LL128 move one step a chunk: 8 in flight.
  out.loop_chunks = proto == Proto::kSimple && ring ? 2 : 1;
  out.slots = proto == Proto::kSimple && ring ? kNcclSteps / 2 : kNcclSteps;
  out.proto = proto;
  const int root = std::clamp(req.root, 0, n - 1);
  out.chain_first = req.coll == Coll::kReduce ? (root + 1) % n : root;

  // Healthy figures: the per-channel bus rate of NCCL's Ring entry and its latency.
  const Graphs g = nccl_graphs(f, s);
  const Table t = tuning_table(f, g, k, req.coll, s);
  const double alg_bw = t.bw_GBps[kRingAlgo][p];
  FLEETSIM_CHECK(alg_bw > 0);
  // NCCL runs a small op on fewer channels (nccl_exec.h channels_used, and
  // ring_active_channels up to 2.19); each keeps the per-channel rate of the
  // full graph, while an absolute LL cap still bounds their sum.
  const int graph_channels = std::max(1, g.ring.channels);
  out.channels = channels_used(f.exec, graph_channels, kRingAlgo, p, req.bytes, n);
  if (k.ring_min_chunk) out.channels = ring_active_channels(f.exec, out.channels, p, req.coll, req.bytes, n);
  const double to_bus = static_cast<double>(nccl_nsteps(req.coll, n)) / n;
  auto channel_rate = [&](const Table& tt) {  // GB/s one channel moves on one hop
    const double a = tt.bw_GBps[kRingAlgo][p] > 0 ? tt.bw_GBps[kRingAlgo][p] : alg_bw;
    const double raw = std::max(a, tt.bw_raw_GBps[kRingAlgo][p]);
    return std::min(a, raw * out.channels / graph_channels) * to_bus / out.channels;
  };
  const double bytes = static_cast<double>(req.bytes);
  const double lat_us = algo_time_us(t, f, g, k, req.coll, Algo::kRing, proto, req.bytes, s) - bytes / (1000.0 * alg_bw);
  out.base_us = k.base_lat_us[kRingAlgo][p];
  // NCCL's latency beyond the base, spread evenly over the schedule's steps
  // (ring: each member pays it every step; chain: each hop once), so a
  // healthy schedule's latency is exactly NCCL's.
  const double hops_us = std::max(0.0, lat_us - out.base_us);
  out.step_us = hops_us / (ring ? out.steps : n - 1);

  // Chunks: a ring step moves bytes/(n * channels) per member, a chain the
  // channel's bytes/channels, streamed in protocol-sized chunks within the caps.
  const double unit = ring ? bytes / (static_cast<double>(n) * out.channels) : bytes / out.channels;
  const int64_t per_chunk_transfers = int64_t{out.steps} * (ring ? n : n - 1);
  const int64_t cap = std::min<int64_t>(ring ? kMaxRingChunks : kMaxChainChunks,
                                        std::max<int64_t>(1, kMaxTransfers / per_chunk_transfers));
  const double want = std::ceil(unit / chunk_bytes(proto, ring));
  out.chunks = static_cast<int>(std::clamp<double>(want, 1.0, static_cast<double>(cap)));
  const double chunk = unit / out.chunks;

  // Per-hop rates: a hop runs at the rate NCCL's model gives a ring whose worst
  // link is this hop's (the degradations that touch it, on the same graphs).
  const int nics = nics_used(f, s);
  std::map<std::vector<int>, double> rate_of;  // degradation subset -> GB/s per channel
  rate_of[{}] = channel_rate(t);
  std::map<std::vector<double>, size_t> class_of;
  for (int ch = 0; ch < out.channels; ++ch) {
    std::vector<double> us(static_cast<size_t>(n), 0.0);
    for (int i = 0; i < n; ++i) {
      std::vector<int> subset;
      std::vector<LinkDegradation> ds;
      for (size_t d = 0; d < req.degraded.size(); ++d) {
        if (!touches(req.degraded[d], i, (i + 1) % n, ch, s, nics)) continue;
        subset.push_back(static_cast<int>(d));
        ds.push_back(req.degraded[d]);
      }
      auto it = rate_of.find(subset);
      if (it == rate_of.end())
        it = rate_of.emplace(subset, channel_rate(tuning_table(f, degraded_graphs(f, s, ds), k, req.coll, s))).first;
      us[static_cast<size_t>(i)] = chunk / (1000.0 * it->second);
    }
    auto [cls, fresh] = class_of.emplace(us, out.chunk_us.size());
    if (fresh) {
      out.chunk_us.push_back(std::move(us));
      out.class_channels.push_back(0);
    }
    ++out.class_channels[cls->second];
  }
  return out;
}

namespace {

// Spans are cached per (collective, size, shape, root, protocol, degradations):
// a scenario repeats the same few collectives every step. The cache only saves
// work; a result never depends on what is cached.
struct SpanKey {
  Coll coll;
  int64_t bytes;
  int ranks, nodes, ppn, root;
  Proto proto;
  std::vector<LinkDegradation> degraded;
  bool operator<(const SpanKey& o) const {
    auto tie = [](const SpanKey& k) {
      return std::tie(k.coll, k.bytes, k.ranks, k.nodes, k.ppn, k.root, k.proto);
    };
    if (tie(*this) != tie(o)) return tie(*this) < tie(o);
    if (degraded.size() != o.degraded.size()) return degraded.size() < o.degraded.size();
    for (size_t i = 0; i < degraded.size(); ++i) {
      const LinkDegradation &a = degraded[i], &b = o.degraded[i];
      if (std::tie(a.kind, a.node, a.index, a.fraction) != std::tie(b.kind, b.node, b.index, b.fraction))
        return std::tie(a.kind, a.node, a.index, a.fraction) < std::tie(b.kind, b.node, b.index, b.fraction);
    }
    return false;
  }
};
constexpr size_t kMaxCached = 256;

class RingStepsCostModel final : public CostModel {
 public:
  RingStepsCostModel(TunedModel tuned, std::unique_ptr<CostModel> analytic)
      : tuned_(std::move(tuned)), analytic_(std::move(analytic)),
        name_("nccl " + tuned_.masked().constants().version + " tuning model, ring steps") {}

  bool wants_arrivals() const override { return true; }

  Duration collective_time(OpKind op, int64_t bytes, const GroupShape& shape) const override {
    return collective_time_after(op, bytes, shape, {}, {}, 0);
  }
  Duration collective_time_degraded(OpKind op, int64_t bytes, const GroupShape& shape,
                                    const std::vector<LinkDegradation>& degraded) const override {
    return collective_time_after(op, bytes, shape, degraded, {}, 0);
  }

  Duration collective_time_after(OpKind op, int64_t bytes, const GroupShape& shape,
                                 const std::vector<LinkDegradation>& degraded,
                                 std::span<const int64_t> arrival_ns, int root) const override {
    const auto coll = coll_from_op(op);
    FLEETSIM_CHECK(coll.has_value());
    bytes = TunedModel::op_bytes(op, bytes);
    const GroupShape s = TunedModel::normalized(shape);
    auto analytic = [&] {
      return degraded.empty() ? analytic_->collective_time(op, bytes, s)
                              : analytic_->collective_time_degraded(op, bytes, s, degraded);
    };
    if (s.ranks <= 1 || *coll == Coll::kAllToAll || *coll == Coll::kSendRecv) return analytic();
    const Estimate e = tuned_.estimate(*coll, bytes, s);  // NCCL's choice, made on the healthy fabric
    if (!e.ok || e.algo != Algo::kRing) return analytic();  // Tree, NVLS, CollNet, PAT: analytic
    const bool chain = *coll == Coll::kBroadcast || *coll == Coll::kReduce;
    SpanKey key{*coll, bytes, s.ranks, s.nodes, s.ranks_per_node, chain ? root : 0, e.proto, degraded};
    const std::shared_ptr<const std::vector<double>> spans = spans_for(key, s);
    double us = kNegInf;
    if (arrival_ns.empty()) {
      for (double v : *spans) us = std::max(us, v);
    } else {
      FLEETSIM_CHECK(arrival_ns.size() == spans->size());
      const int64_t last = *std::max_element(arrival_ns.begin(), arrival_ns.end());
      for (size_t i = 0; i < spans->size(); ++i)
        us = std::max(us, static_cast<double>(arrival_ns[i] - last) * 1e-3 + (*spans)[i]);
    }
    return round_to_duration(std::max(0.0, us) * 1e-6);
  }

  const char* name() const override { return name_.c_str(); }

 private:
  std::shared_ptr<const std::vector<double>> spans_for(const SpanKey& key, const GroupShape& s) const {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    }
    StepRequest req;
    req.coll = key.coll;
    req.bytes = key.bytes;
    req.shape = s;
    req.degraded = key.degraded;
    req.root = key.root;
    auto spans = std::make_shared<const std::vector<double>>(
        completion_spans_us(ring_schedule(tuned_.masked(), req, key.proto)));
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_.size() >= kMaxCached) cache_.clear();  // bounded; only costs recomputation
    cache_.emplace(key, spans);
    return spans;
  }

  TunedModel tuned_;
  std::unique_ptr<CostModel> analytic_;
  std::string name_;
  mutable std::mutex mu_;
  mutable std::map<SpanKey, std::shared_ptr<const std::vector<double>>> cache_;
};

}  // namespace

std::unique_ptr<CostModel> make_ring_steps_model(const Fabric& fabric, const Options& options) {
  auto tuned = TunedModel::create(fabric, options);
  auto analytic = make_nccl_model(fabric, options);
  if (!tuned || !analytic) return nullptr;
  return std::make_unique<RingStepsCostModel>(std::move(*tuned), std::move(analytic));
}

}  // namespace fleetsim::nccl
