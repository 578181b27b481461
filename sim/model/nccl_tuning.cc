// The tuning table and time formula of NCCL (tuning.cc: ncclTopoTuneModel,
// ncclTopoGetAlgoTime), re-expressed from the formulas in
// NCCL 2.30.7's tuning.cc (bandwidths, latencies, the argmin; docs/collectives.md), with
// the pre-2.29 NVLS variant (min(bwIntra, bwInter), 5/6 ratio) for older sets.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/model/nccl_model.h"

namespace fleetsim::nccl {
namespace {

constexpr int kTree = 0, kRing = 1, kCnd = 2, kCnc = 3, kNvls = 4, kNvlsTree = 5, kPat = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;

int log2i(int64_t v) {  // floor(log2 v), -1 for v <= 0
  int r = -1;
  while (v > 0) { v >>= 1; ++r; }
  return r;
}

int nsteps_of(Coll c, int n) {
  switch (c) {
    case Coll::kAllReduce: return 2 * (n - 1);
    case Coll::kAllGather: case Coll::kReduceScatter: return n - 1;
    default: return n;  // broadcast, reduce
  }
}

bool is_ag_rs(Coll c) { return c == Coll::kAllGather || c == Coll::kReduceScatter; }

// Which (algorithm, protocol) NCCL offers at all for this op on this fabric.
bool offered(const Fabric& f, const Constants& c, Coll coll, int a, int p, const GroupShape& s) {
  const bool nvlink = f.nvlink_bandwidth_GBps > 0;
  const bool nvls_hw = f.nvls && nvlink && f.arch >= GpuArch::kHopper && s.ranks_per_node >= 2;
  switch (a) {
    case kTree: return coll == Coll::kAllReduce && s.ranks > 1;
    case kRing:
      if (p == kLL128) return nvlink && (s.nodes == 1 || f.gpudirect);  // LL128 path rule
      return true;
    case kCnd:
      return p == kSimple && f.collnet && s.nodes > 1 && nvlink && (coll == Coll::kAllReduce || is_ag_rs(coll));
    case kCnc: return p == kSimple && f.collnet && s.nodes > 1 && coll == Coll::kAllReduce;
    case kNvls:
      // Multi-node NVLS needs CollNet (IB SHARP); AG/RS over NVLS likewise.
      return p == kSimple && nvls_hw && (s.nodes == 1 || f.collnet) &&
             (coll == Coll::kAllReduce || is_ag_rs(coll));
    case kNvlsTree: return p == kSimple && nvls_hw && s.nodes > 1 && coll == Coll::kAllReduce;
    case kPat: return p == kSimple && c.has_pat && s.ranks_per_node == 1 && s.nodes > 1 && is_ag_rs(coll);
  }
  return false;
}

const Graph& graph_of(const Graphs& g, int a) {
  switch (a) {
    case kTree: return g.tree;
    case kCnd: case kCnc: return g.collnet;
    case kNvls: case kNvlsTree: return g.nvls;
    default: return g.ring;  // ring, PAT
  }
}

// NVLS / NVLSTree per-channel bandwidth (reference §1.3 step 2; legacy pre-2.29).
double nvls_channel_bw(const Constants& c, const Fabric& f, const Graph& gr, Coll coll, int a,
                       const GroupShape& s, int idx2) {
  const double ppn = s.ranks_per_node;
  if (c.nvls_model == NvlsModel::kLegacyFiveSixths) {
    if (a == kNvlsTree) {
      return std::min(gr.bw_intra_GBps, s.nodes <= 2 ? gr.bw_inter_GBps : gr.bw_inter_GBps / 2);
    }
    if (coll == Coll::kAllReduce) return std::min(gr.bw_intra_GBps, gr.bw_inter_GBps);
    return std::min(gr.bw_intra_GBps * (ppn - 1) / ppn, gr.bw_inter_GBps * 0.9);
  }
  const int arch = static_cast<int>(f.arch);
  const double nch = gr.channels;
  const double intra = gr.bw_intra_GBps * c.nvls_efficiency[arch] * (nch - 1) / nch *
                       (coll == Coll::kAllReduce ? 2.0 : (ppn - 1) / ppn);
  const double inter = gr.bw_inter_GBps * (a == kNvlsTree && s.nodes <= 2 ? 2.0 : 1.0);
  double bw = std::min(intra, inter);
  if (a == kNvlsTree) bw = std::min(bw, c.per_ch_max_nvls_tree_bw[arch][idx2]);
  return bw;
}

// Bus bandwidth of one entry, before the bus -> algorithm conversion; `raw`
// (optional) gets it without the absolute LL caps.
double bus_bw(const Fabric& f, const Graphs& g, const Constants& c, Coll coll, int a, int p,
              const GroupShape& s, double* raw) {
  const int arch = static_cast<int>(f.arch);
  const int idx2 = s.nodes <= 2 ? s.nodes - 1 : 2;
  const double ll_max = s.nodes == 1 ? c.ll_max_bw[arch][0]
                                     : c.ll_max_bw[f.cpu == CpuVendor::kIntel ? 0 : 1][idx2];
  const Graph& gr = graph_of(g, a);
  const double nch = gr.channels;
  const bool collnet = a == kCnd || a == kCnc;
  double bw = (s.nodes <= 2 || collnet) ? gr.bw_intra_GBps : gr.bw_inter_GBps;
  if (a == kNvls || a == kNvlsTree) {
    if (gr.channels < 2) return 0;
    bw = nvls_channel_bw(c, f, gr, coll, a, s, idx2);
  }
  double bus = nch * bw;
  double uncapped = -1;  // set where an absolute LL cap applies
  if (a == kRing && p == kLL) {
    const bool quarter = s.nodes > 1 || coll == Coll::kAllReduce || coll == Coll::kReduce;
    uncapped = bus * (quarter ? c.ring_ll_fraction : c.ring_ll_fraction_other_one_node);
    bus = std::min(ll_max, uncapped);
  }
  if (a == kRing && p == kLL128) {
    const double eff = s.ranks_per_node < 2 ? c.ring_ll128_one_ppn : 0.92;
    bus = std::min(eff * bus, nch * c.per_ch_max_ring_ll128_bw[arch][idx2]);
  }
  if (a == kTree) {
    bus = std::min(0.92 * bus, nch * c.per_ch_max_tree_bw[arch][idx2]);
    if (p == kLL) {
      uncapped = bus / 3.8;
      bus = std::min(uncapped, ll_max);
    }
    if (p == kLL128) {
      bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                     nch * c.per_ch_max_tree_ll128_bw[arch][idx2]);
    }
    if (g.tree_is_real_tree) bus *= 0.85;
  }
  if (a == kPat) bus *= 0.75;
  if (raw != nullptr) *raw = std::max(bus, uncapped);
  if (a == kCnd) {
    const double ppn = s.ranks_per_node;
    if (is_ag_rs(coll)) {
      bus = ppn * std::min(gr.bw_intra_GBps, 0.9 * gr.bw_inter_GBps);
    } else {
      double factor = ppn / nch;  // GPUs per NIC
      factor -= (factor - 1) / 2;
      bus /= factor;
      if (f.arch >= GpuArch::kHopper) bus *= 0.85;
    }
  }
  return bus;
}

// Bus -> algorithm bandwidth (reference §1.3 step 4).
double alg_ratio(const Constants& c, Coll coll, int a, int n) {
  if (a != kRing && is_ag_rs(coll)) return 1.0;
  if (a == kRing) return static_cast<double>(n) / nsteps_of(coll, n);
  if (a == kNvls || a == kNvlsTree) {
    return c.nvls_model == NvlsModel::kLegacyFiveSixths ? 5.0 / 6.0
                                                         : static_cast<double>(n) / nsteps_of(coll, n);
  }
  return 0.5;
}

double latency_us(const Fabric& f, const Graphs& g, const Constants& c, Coll coll, int a, int p,
                  const GroupShape& s) {
  const int intra_hw = f.nvlink_bandwidth_GBps > 0 ? 0 : 1;
  const int ppn = s.ranks_per_node, nodes = s.nodes, n = s.ranks;
  const double base = c.base_lat_us[a][p];
  // The fabric's hop latencies beyond NCCL's tables (fleet.nvlink_latency / net_latency).
  const double intra = std::max(0.0, c.hw_lat_us[intra_hw][a][p] + f.nvlink_hop_extra_us);
  double inter = std::max(0.0, c.hw_lat_us[2][ppn == 1 ? kTree : a][p] + f.net_hop_extra_us) + f.net_latency_us;
  if (p == kSimple) inter += f.net_latency_us;  // flush
  switch (a) {
    case kRing: {
      if (coll == Coll::kBroadcast || coll == Coll::kReduce) {
        // One hop of the ring's path class when all channels follow one GPU
        // order (sameChannels); else nsteps hops, Simple taking Tree's per-hop
        // latency as its chunk latency.
        const int hw = nodes > 1 ? 2 : intra_hw;
        const double extra = nodes > 1 ? f.net_hop_extra_us : f.nvlink_hop_extra_us;
        if (g.ring_same_channels) return base + std::max(0.0, c.hw_lat_us[hw][kRing][p] + extra);
        const int hop_algo = p == kSimple ? kTree : kRing;
        return base + nsteps_of(coll, n) * std::max(0.0, c.hw_lat_us[hw][hop_algo][p] + extra);
      }
      double ovh = 0;
      if (nodes > 1) {
        ovh = f.net_overhead_us >= 0 ? f.net_overhead_us : (f.cpu == CpuVendor::kAmd ? 2.0 : 1.0);
        if (p == kSimple) ovh *= 3;
      }
      const int steps = nsteps_of(coll, n);
      const int n_inter = nodes == 1 ? 0 : coll == Coll::kAllReduce ? 2 * (nodes - 1) : nodes - 1;
      return base + (steps - n_inter) * std::max(intra, ovh) + n_inter * inter;
    }
    case kTree: return base + 2 * ((ppn - 1) * intra + log2i(nodes) * inter);
    case kCnd: return base + 2 * (std::min(1, ppn - 1) * intra + (ppn - 1) * 0.4) + inter;
    case kCnc: return base + 2 * (ppn - 1) * intra + inter;
    case kNvls: return intra + (nodes > 1 ? inter : 0.0);
    case kNvlsTree: return base + intra + 2 * log2i(nodes) * inter;
    case kPat: return 8 + log2i(nodes) * inter / 3.5 + 2.8 * n;
  }
  return 0;
}

}  // namespace

Table tuning_table(const Fabric& f, const Graphs& g, const Constants& c, Coll coll, const GroupShape& s) {
  Table t;
  if (coll == Coll::kAllToAll || coll == Coll::kSendRecv) return t;  // not in tuning.cc
  for (int a = 0; a < kNumAlgos; ++a) {
    for (int p = 0; p < kNumProtos; ++p) {
      if (!offered(f, c, coll, a, p, s)) continue;
      double raw_bus = 0;
      const double ratio = alg_ratio(c, coll, a, s.ranks);
      const double bw = bus_bw(f, g, c, coll, a, p, s, &raw_bus) * ratio;
      if (!(bw > 0)) continue;
      t.bw_GBps[a][p] = bw;
      t.bw_raw_GBps[a][p] = raw_bus * ratio;
      t.lat_us[a][p] = latency_us(f, g, c, coll, a, p, s);
    }
  }
  return t;
}

void apply_masks(Table* t, uint32_t algo_mask, uint32_t proto_mask) {
  for (int a = 0; a < kNumAlgos; ++a) {
    for (int p = 0; p < kNumProtos; ++p) {
      if (!(algo_mask & (1u << a)) || !(proto_mask & (1u << p))) t->bw_GBps[a][p] = 0;
    }
  }
}

TimeParts algo_time_parts(const Table& t, const Fabric& f, const Graphs& g, const Constants& c, Coll coll,
                          Algo algo, Proto proto, int64_t bytes, const GroupShape& s) {
  const int a = static_cast<int>(algo), p = static_cast<int>(proto);
  TimeParts parts;
  if (a >= kNumAlgos || !(t.bw_GBps[a][p] > 0)) return parts;
  double bw = t.bw_GBps[a][p];
  double lat = t.lat_us[a][p];
  const int k = log2i(bytes >> 6);
  const bool tree_like = a == kTree || (a == kNvlsTree && f.arch == GpuArch::kBlackwell);
  double raw = std::max(bw, t.bw_raw_GBps[a][p]);
  if (coll == Coll::kAllReduce && tree_like && k >= 0 && k < 23) {
    bw *= c.tree_correction[p][k];
    raw *= c.tree_correction[p][k];
  }
  const int64_t per_channel_rank = bytes / std::max<int64_t>(1, int64_t{g.ring.channels} * s.ranks);
  if (a == kRing && p == kSimple && s.nodes > 1 && coll == Coll::kAllReduce && per_channel_rank >= 64) {
    lat *= f.arch >= GpuArch::kAmpere ? 1.4 : 1.9;  // plateau effect of ring
  }
  parts.ok = true;
  parts.lat_us = lat;
  parts.bw_GBps = bw;
  parts.bw_raw_GBps = raw;
  return parts;
}

double algo_time_us(const Table& t, const Fabric& f, const Graphs& g, const Constants& c, Coll coll,
                    Algo algo, Proto proto, int64_t bytes, const GroupShape& s) {
  const TimeParts parts = algo_time_parts(t, f, g, c, coll, algo, proto, bytes, s);
  if (!parts.ok) return -1.0;
  return parts.lat_us + static_cast<double>(bytes) / (1000.0 * parts.bw_GBps);
}

Estimate select(const Table& t, const Fabric& f, const Graphs& g, const Constants& c, Coll coll,
                int64_t bytes, const GroupShape& s) {
  Estimate best;
  double best_time = std::numeric_limits<double>::infinity();
  for (int a = 0; a < kNumAlgos; ++a) {
    for (int p = 0; p < kNumProtos; ++p) {
      const double time = algo_time_us(t, f, g, c, coll, static_cast<Algo>(a), static_cast<Proto>(p), bytes, s);
      if (time < 0 || !(time < best_time)) continue;
      best_time = time;
      best.ok = true;
      best.algo = static_cast<Algo>(a);
      best.proto = static_cast<Proto>(p);
      best.time_us = time;
      best.lat_us = t.lat_us[a][p];
      best.bw_GBps = time > best.lat_us ? static_cast<double>(bytes) / (1000.0 * (time - best.lat_us)) : t.bw_GBps[a][p];
    }
  }
  return best;
}

}  // namespace fleetsim::nccl
