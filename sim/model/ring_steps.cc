// The step-level ring model. A schedule is a max-plus recurrence over the
// transfers of one channel: member i sends the K chunks of step s on hop
// i -> i+1 once its link is free and it has received chunk c of step s-1 from
// member i-1; each step first costs the sender `step_us`, each chunk
// `chunk_us[i]` on the hop. So completion = max_i (arrival_i + span_i), span_i
// the longest path from member i's start to the end: a ring's spans come from a
// closed form in O(members x distinct hop times) (the recurrence over every
// transfer is kept as the reference), a chain's from the recurrence; they are
// cached per (collective, size, group shape, degradations), and a call costs
// O(members). docs/collectives.md ("The step model").
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

// Exact time for the ring's longest paths: 2^-40 ns units in 128 bits, so sums
// never round and any evaluation order (the closed form, the recurrence) gives
// the same value. A weight converts with one rounding (< 2^-41 ns); 2^127
// units are 2^87 ns, far beyond any sum of at most 2^23 weights of <= 2^40 µs.
__extension__ typedef __int128 Ticks;
constexpr int kTickBits = 40;                    // ticks per ns = 2^40
constexpr double kMaxWeightUs = 1099511627776.0;  // 2^40 µs (12.7 days): a longer transfer is held at it
constexpr Ticks kNegTicks = -(Ticks{1} << 120);

// µs -> ticks, rounded to nearest (us = mant * 2^(e-53), so us * 1000 * 2^40 is
// mant * 1000 shifted by e - 13).
Ticks to_ticks(double us) {
  FLEETSIM_CHECK(!std::isnan(us));
  if (us < 0) return -to_ticks(-us);
  us = std::min(us, kMaxWeightUs);
  if (us == 0) return 0;
  int e = 0;
  const double f = std::frexp(us, &e);
  const Ticks v = static_cast<Ticks>(static_cast<int64_t>(std::ldexp(f, 53))) * 1000;
  const int shift = e - 53 + kTickBits;
  if (shift >= 0) return v << shift;
  if (shift <= -100) return 0;
  return (v + (Ticks{1} << (-shift - 1))) >> -shift;
}

double to_us(Ticks t) { return std::ldexp(static_cast<double>(t), -kTickBits) / 1000.0; }

// A ring schedule's figures in ticks: one class's hop times, the per-step cost.
struct RingTicks {
  int n = 0, steps = 0, chunks = 0;
  Ticks o = 0;
  std::vector<Ticks> tau;
};

RingTicks ring_ticks(const StepSchedule& s, const std::vector<double>& chunk_us) {
  RingTicks r{s.ranks, s.steps, s.chunks, to_ticks(s.step_us), {}};
  r.tau.reserve(chunk_us.size());
  for (double us : chunk_us) r.tau.push_back(to_ticks(us));
  return r;
}

// The ring's step recurrence run backwards over every transfer (the reference,
// O(steps x members x chunks)): LE[i*K+c] is the longest path from "chunk c of
// member i's step s is received by i+1" to completion, LX[i] from "member i may
// start step s". span[i] = max(span[i], LX[i] of step 0).
void ring_spans_by_recurrence(const RingTicks& r, std::vector<Ticks>& span) {
  const int n = r.n, K = r.chunks;
  const auto nk = static_cast<size_t>(n) * static_cast<size_t>(K);
  std::vector<Ticks> le_cur(nk), le_next(nk), lx_cur(static_cast<size_t>(n)), lx_next(static_cast<size_t>(n));
  for (int st = r.steps - 1; st >= 0; --st) {
    const bool last = st == r.steps - 1;
    for (int i = 0; i < n; ++i) {
      const int ip = i + 1 == n ? 0 : i + 1;
      const Ticks ti = r.tau[static_cast<size_t>(i)], tip = r.tau[static_cast<size_t>(ip)];
      Ticks* le = &le_cur[static_cast<size_t>(i) * K];
      const Ticks* le_ip = &le_next[static_cast<size_t>(ip) * K];
      for (int c = K - 1; c >= 0; --c) {
        Ticks v = c + 1 < K ? ti + le[c + 1] : kNegTicks;
        if (!last) {
          v = std::max(v, tip + le_ip[c]);
          if (c == K - 1) v = std::max(v, lx_next[static_cast<size_t>(i)]);
          if (c == 0) v = std::max(v, lx_next[static_cast<size_t>(ip)]);
        } else if (c == K - 1) {
          v = std::max<Ticks>(v, 0);
        }
        le[c] = v;
      }
      lx_cur[static_cast<size_t>(i)] = r.o + ti + le[0];
    }
    std::swap(le_cur, le_next);
    std::swap(lx_cur, lx_next);
  }
  for (int i = 0; i < n; ++i)
    span[static_cast<size_t>(i)] = std::max(span[static_cast<size_t>(i)], lx_next[static_cast<size_t>(i)]);
}

// The same longest paths in closed form (docs/collectives.md, "How it is
// computed"). Unroll the ring: position p is member p mod n, T[p] its hop time,
// P[p] = T[0] + ... + T[p-1]. The longest path from member j forwards the first
// chunk of each step one hop a step to some member p (paying T and the step
// cost once at each), then stays there, sending all its remaining (S - (p-j)) K
// chunks:
//   span_j = S o + max_{j <= p < j+S} (P[p] - P[j] + (S - (p-j)) K T[p]).
// Only prefix maxima of T from j can win (going further at no higher rate only
// shortens the stay), so p walks the chain of next higher hop times:
// O(n x distinct hop times).
void ring_spans_closed_form(const RingTicks& r, std::vector<Ticks>& span) {
  const int n = r.n, S = r.steps, len = r.n + r.steps;
  const Ticks K = r.chunks;
  auto T = [&](int p) { return r.tau[static_cast<size_t>(p % n)]; };
  std::vector<Ticks> prefix(static_cast<size_t>(len) + 1, 0);
  for (int p = 0; p < len; ++p) prefix[static_cast<size_t>(p) + 1] = prefix[static_cast<size_t>(p)] + T(p);
  std::vector<int> next_higher(static_cast<size_t>(len)), stack;  // first q > p with T(q) > T(p), else len
  for (int p = len - 1; p >= 0; --p) {
    while (!stack.empty() && T(stack.back()) <= T(p)) stack.pop_back();
    next_higher[static_cast<size_t>(p)] = stack.empty() ? len : stack.back();
    stack.push_back(p);
  }
  for (int j = 0; j < n; ++j) {
    Ticks best = 0;
    for (int p = j; p - j < S; p = next_higher[static_cast<size_t>(p)])
      best = std::max(best, prefix[static_cast<size_t>(p)] - prefix[static_cast<size_t>(j)] + (S - (p - j)) * K * T(p));
    span[static_cast<size_t>(j)] = std::max(span[static_cast<size_t>(j)], S * r.o + best);
  }
}

// A chain's spans (broadcast, reduce): the recurrence backwards over its
// O(members x chunks) transfers, in µs.
void chain_spans_us(const StepSchedule& s, const std::vector<double>& tau, std::vector<double>& span) {
  const int n = s.ranks, K = s.chunks;
  const double o = s.step_us;
  // Chain positions p = 0..n-1 over members (first + p) mod n.
  auto member = [&](int p) { return (s.chain_first + p) % n; };
  std::vector<double> le_cur(static_cast<size_t>(K)), le_next(static_cast<size_t>(K));
  double lx_next = kNegInf;
  for (int p = n - 2; p >= 0; --p) {
    const double tp = tau[static_cast<size_t>(member(p))];
    const bool last = p == n - 2;
    const double tn = last ? 0.0 : tau[static_cast<size_t>(member(p + 1))];
    for (int c = K - 1; c >= 0; --c) {
      double v = c + 1 < K ? tp + le_cur[static_cast<size_t>(c) + 1] : kNegInf;
      if (!last) {
        v = std::max(v, tn + le_next[static_cast<size_t>(c)]);
        if (c == 0) v = std::max(v, lx_next);
      } else if (c == K - 1) {
        v = std::max(v, 0.0);
      }
      le_cur[static_cast<size_t>(c)] = v;
    }
    const double lx = o + tp + le_cur[0];
    span[static_cast<size_t>(member(p))] = std::max(span[static_cast<size_t>(member(p))], s.base_us + lx);
    lx_next = lx;
    std::swap(le_cur, le_next);
  }
  span[static_cast<size_t>(member(n - 1))] = std::max(span[static_cast<size_t>(member(n - 1))], s.base_us);
}

std::vector<double> spans_us(const StepSchedule& s, void (*ring_spans)(const RingTicks&, std::vector<Ticks>&)) {
  std::vector<double> out(static_cast<size_t>(s.ranks), kNegInf);
  if (s.kind == StepSchedule::Kind::kChain) {
    for (const std::vector<double>& tau : s.chunk_us) chain_spans_us(s, tau, out);
    return out;
  }
  std::vector<Ticks> span(static_cast<size_t>(s.ranks), kNegTicks);
  for (const std::vector<double>& tau : s.chunk_us) ring_spans(ring_ticks(s, tau), span);
  const Ticks base = to_ticks(s.base_us);
  for (size_t i = 0; i < span.size(); ++i) out[i] = to_us(base + span[i]);
  return out;
}

}  // namespace

std::vector<double> completion_spans_us(const StepSchedule& s) { return spans_us(s, ring_spans_closed_form); }

std::vector<double> completion_spans_reference_us(const StepSchedule& s) {
  return spans_us(s, ring_spans_by_recurrence);
}

double simulate_us(const StepSchedule& s, std::span<const double> arrival_us) {
  const int n = s.ranks, K = s.chunks;
  FLEETSIM_CHECK(static_cast<int>(arrival_us.size()) == n);
  const double o = s.step_us;
  double done = kNegInf;
  const auto nk = static_cast<size_t>(n) * static_cast<size_t>(K);
  for (const std::vector<double>& tau : s.chunk_us) {
    if (s.kind == StepSchedule::Kind::kRing) {
      // E[i*K+c]: when chunk c of member i's current step reaches member i+1.
      std::vector<double> e_prev(nk), e_cur(nk), link(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) link[static_cast<size_t>(i)] = arrival_us[static_cast<size_t>(i)] + s.base_us;
      for (int st = 0; st < s.steps; ++st) {
        for (int i = 0; i < n; ++i) {
          const int im = i == 0 ? n - 1 : i - 1;
          const double* in = &e_prev[static_cast<size_t>(im) * K];
          double* e = &e_cur[static_cast<size_t>(i) * K];
          const double ti = tau[static_cast<size_t>(i)];
          double t = link[static_cast<size_t>(i)];
          if (st > 0) t = std::max(t, in[0]);
          t += o;
          for (int c = 0; c < K; ++c) {
            if (st > 0) t = std::max(t, in[c]);
            t += ti;
            e[c] = t;
          }
          link[static_cast<size_t>(i)] = t;
        }
        std::swap(e_prev, e_cur);
      }
      for (int i = 0; i < n; ++i) done = std::max(done, link[static_cast<size_t>(i)]);
    } else {
      auto member = [&](int p) { return (s.chain_first + p) % n; };
      std::vector<double> prev(static_cast<size_t>(K)), cur(static_cast<size_t>(K));
      for (int p = 0; p + 1 < n; ++p) {
        const int m = member(p);
        double t = arrival_us[static_cast<size_t>(m)] + s.base_us;
        if (p > 0) t = std::max(t, prev[0]);
        t += o;
        const double tp = tau[static_cast<size_t>(m)];
        for (int c = 0; c < K; ++c) {
          if (p > 0) t = std::max(t, prev[static_cast<size_t>(c)]);
          t += tp;
          cur[static_cast<size_t>(c)] = t;
        }
        std::swap(prev, cur);
      }
      done = std::max(done, prev[static_cast<size_t>(K) - 1]);
    }
  }
  for (int i = 0; i < n; ++i) done = std::max(done, arrival_us[static_cast<size_t>(i)] + s.base_us);
  return done;
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
