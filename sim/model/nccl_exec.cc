// Execution timing of NCCL's chosen (algorithm, protocol): channel reduction
// for small messages, the NVLS chunk schedule with its per-step sync and
// pipeline fill, the P2P channel plan of a one-node all-to-all, serial host
// launches and the host floor of a -g N call.
// Facts from NCCL 2.30.7's enqueue.cc and device code as documented in
// docs/collectives.md ("Execution timing"); no NCCL code.
#include "sim/model/nccl_exec.h"

#include <algorithm>
#include <cmath>

#include "sim/model/nccl_model.h"

namespace fleetsim::nccl {
namespace {

constexpr int kTree = 0, kRing = 1, kCnd = 2, kCnc = 3, kNvls = 4, kNvlsTree = 5;
constexpr int kLL = 0, kSimple = 2;
constexpr int64_t kKiB = 1024;
// Ring LL / LL128 chunking of NCCL <= 2.19 (all_reduce.h, all_gather.h, prims_ll*.h):
// the minimum chunk is 8 B of data per LL thread and, for LL128, 8 lines of
// 120 B per 16 threads, halved ("makes performance much, much smoother"): 30 B
// per thread. The largest chunk is one buffer step of data: 32 KiB (LL), 576,000 B (LL128).
constexpr double kLLMinChunkPerThread = 8;
constexpr double kLL128MinChunkPerThread = 30;
constexpr double kLLChunkBytes = 32 * 1024;
constexpr double kLL128ChunkBytes = 576000;

int floor_log2(int v) {
  int r = 0;
  while (v > 1) { v >>= 1; ++r; }
  return r;
}

const Graph& graph_for(const Graphs& g, int a) {
  switch (a) {
    case kTree: return g.tree;
    case kCnd: case kCnc: return g.collnet;
    case kNvls: case kNvlsTree: return g.nvls;
    default: return g.ring;
  }
}

// NVLS / NVLSTree: L steps per channel through a pipeline of `stages`, each
// step moving heads x chunk bytes of the channel's data and paying one sync.
// The preset's NVLS bandwidth is the measured plateau at the default chunk, so
// the raw per-channel rate is what leaves that plateau after the sync.
double nvls_time_us(const TimeParts& parts, const Fabric& f, const Graphs& g, const Constants& c,
                    const ExecTerms& x, Coll coll, int a, int64_t bytes, const GroupShape& s) {
  const int nc = std::max(1, g.nvls.channels);
  const int heads = std::max(1, s.ranks_per_node);
  int64_t chunk = nvls_chunk_bytes(x, bytes, nc, heads);
  if (a == kNvlsTree && s.nodes >= 4) chunk = std::min<int64_t>(chunk, 64 * kKiB);  // nvlsTreeMaxChunkSize
  const double step_bytes = static_cast<double>(heads) * static_cast<double>(chunk);
  const double max_step_bytes = heads * x.nvls_chunk_bytes;
  double bw = parts.bw_GBps;
  if (a == kNvlsTree) {
    // NVLSTree still reduces and broadcasts inside each node through NVLS: it
    // cannot beat the one-node NVLS algorithm bandwidth.
    const GroupShape node{heads, 1, heads};
    const Table one = tuning_table(f, nccl_graphs(f, node), c, coll, node);
    if (one.bw_GBps[kNvls][kSimple] > 0) bw = std::min(bw, one.bw_GBps[kNvls][kSimple]);
  }
  const double tuned_inv = nc / (1000.0 * bw);  // us per byte on one channel
  const double raw_inv = std::max(0.1 * tuned_inv, tuned_inv - x.nvls_step_sync_us / max_step_bytes);
  const double step_us = step_bytes * raw_inv + x.nvls_step_sync_us;
  const double loops = std::max(1.0, static_cast<double>(bytes) / (nc * step_bytes));
  const int stages = x.nvls_stages + (a == kNvlsTree ? 2 * floor_log2(s.nodes) : 0);
  // The tuning latency's flat NVLink term becomes the kernel's fixed cost; its
  // network hops (multi-node) stay.
  const double intra = c.hw_lat_us[f.nvlink_bandwidth_GBps > 0 ? 0 : 1][a][kSimple];
  const double lat = std::max(0.0, parts.lat_us - intra) + x.nvls_base_us;
  return lat + (loops + stages - 1) * step_us;
}

// Host floor of one call when a thread drives `gpus` GPUs (nccl-tests -g N):
// each GPU's share grows with the channels (CTAs) its kernel launches.
double call_floor_us(const ExecTerms& x, int gpus, int channels) {
  if (gpus <= 1) return 0.0;
  return gpus * (x.call_floor_us_per_gpu + x.call_floor_us_per_channel * std::max(0, channels - 1));
}

}  // namespace

ExecTerms exec_terms_for(GpuArch /*arch*/) { return ExecTerms{}; }

int channels_used(const ExecTerms& x, int channels, int algo, int proto, int64_t bytes, int ranks) {
  channels = std::max(1, channels);
  if (algo != kRing && algo != kTree) return channels;
  double threshold = x.thread_threshold[proto];
  if (algo == kRing && proto == kLL) threshold *= std::max(1, ranks);
  const double per_channel = x.ring_threads[proto] * threshold;
  if (!(per_channel > 0)) return channels;
  const double fit = std::floor(static_cast<double>(bytes) / per_channel);
  return static_cast<int>(std::clamp(fit, 1.0, static_cast<double>(channels)));
}

int ring_active_channels(const ExecTerms& x, int channels, int proto, Coll coll, int64_t bytes, int ranks) {
  if (proto == kSimple || channels <= 1) return channels;
  // Bytes one rank contributes to the loop: its piece of an all-reduce, all-gather
  // or reduce-scatter; the whole buffer of a broadcast or reduce.
  const bool whole = coll == Coll::kBroadcast || coll == Coll::kReduce;
  const double piece = static_cast<double>(bytes) / (whole ? 1 : std::max(1, ranks));
  const double min_chunk = x.ring_threads[proto] * (proto == kLL ? kLLMinChunkPerThread : kLL128MinChunkPerThread);
  const double max_chunk = proto == kLL ? kLLChunkBytes : kLL128ChunkBytes;
  const double chunk = std::min(max_chunk, std::ceil(piece / (channels * min_chunk)) * min_chunk);
  return static_cast<int>(std::clamp(std::ceil(piece / chunk), 1.0, static_cast<double>(channels)));
}

int64_t nvls_chunk_bytes(const ExecTerms& x, int64_t bytes, int channels, int heads) {
  const int64_t conc = int64_t{std::max(1, channels)} * std::max(1, heads);
  int64_t chunk = static_cast<int64_t>(x.nvls_chunk_bytes);
  if (bytes < 64 * conc * chunk) chunk = 64 * kKiB;
  if (bytes < 8 * conc * 64 * kKiB) chunk = 32 * kKiB;
  if (bytes < 2 * conc * 32 * kKiB) chunk = 16 * kKiB;
  return std::min<int64_t>(chunk, static_cast<int64_t>(x.nvls_chunk_bytes));
}

int p2p_channels_per_peer(const ExecTerms& x, int p2p_channels, int ranks, int64_t per_peer_bytes) {
  const int total = std::max(1, p2p_channels);
  const int n = std::max(1, ranks);
  // One channel per operation if all fit; at most 4 operations a channel.
  int lo = total, hi = total;
  while (lo * n > total && lo > 1) lo /= 2;
  while (hi * n > 4 * total && hi > 1) hi /= 2;
  // A piece is the peer's bytes over `lo` channels, doubled in channels while
  // it exceeds 32 P2P steps (one node).
  const double step = std::max(1.0, x.p2p_nvl_chunk_bytes);
  const double min_piece = step / 8, max_piece = 32 * step;
  const double bytes = static_cast<double>(std::max<int64_t>(0, per_peer_bytes));
  int used = lo;
  double piece = std::max(min_piece, std::ceil(bytes / used));
  while (piece > max_piece && used <= hi / 2) {
    used *= 2;
    piece = std::ceil(bytes / used);
  }
  return used;
}

double alltoall_channel_share(const Fabric& f, const Graphs& g, const ExecTerms& x, int64_t bytes,
                              const GroupShape& s) {
  if (s.nodes > 1 || s.ranks <= 1 || !(f.nvlink_bandwidth_GBps > 0)) return 1.0;
  int p2p_channels = 1;  // pow2Up(the ring's channels)
  while (p2p_channels < g.ring.channels) p2p_channels *= 2;
  const int per_peer = p2p_channels_per_peer(x, p2p_channels, s.ranks, bytes / s.ranks);
  return std::min(1.0, static_cast<double>(s.ranks - 1) * per_peer / p2p_channels);
}

double exec_time_us(const Table& t, const Fabric& f, const Graphs& g, const Constants& c, const ExecTerms& x,
                    Coll coll, Algo algo, Proto proto, int64_t bytes, const GroupShape& s, int gpus_per_thread) {
  const TimeParts parts = algo_time_parts(t, f, g, c, coll, algo, proto, bytes, s);
  if (!parts.ok) return -1.0;
  const int a = static_cast<int>(algo), p = static_cast<int>(proto);
  const double launch = x.launch_us_per_gpu * std::max(0, gpus_per_thread - 1);
  const int nch = std::max(1, graph_for(g, a).channels);
  if (a == kNvls || a == kNvlsTree) {
    const double floor = call_floor_us(x, gpus_per_thread, nch);
    return std::max(floor, launch + nvls_time_us(parts, f, g, c, x, coll, a, bytes, s));
  }
  int used = channels_used(x, nch, a, p, bytes, s.ranks);
  const double floor = call_floor_us(x, gpus_per_thread, used);
  if (a == kRing && c.ring_min_chunk) used = ring_active_channels(x, used, p, coll, bytes, s.ranks);
  // Each channel keeps its own rate; an absolute cap (llMaxBws) still bounds the sum.
  const double bw = std::min(parts.bw_GBps, parts.bw_raw_GBps * used / nch);
  return std::max(floor, launch + parts.lat_us + static_cast<double>(bytes) / (1000.0 * bw));
}

}  // namespace fleetsim::nccl
