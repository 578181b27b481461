// Published nccl-tests tables (tests/fixtures/nccl-tests/, source and hardware in
// each header) against the model: per table the median and worst busbw error from
// 64 KiB up, NCCL's own estimate (before) and the execution model (after). Bounds:
// one node median <= 10%, worst <= 25%; several nodes median <= 15%. A table the
// model misses is listed with its reason and printed, never dropped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/model/calibration.h"
#include "sim/model/nccl_model.h"
#include "validate/calibrate_from_logs.h"

namespace fleetsim::nccl {
namespace {

struct Row {
  int64_t bytes = 0;
  double time_us = 0;  // out-of-place
  double busbw = 0;    // out-of-place, GB/s
};

struct Published {
  std::vector<Row> rows;
  int gpus_per_thread = 1;  // nccl-tests' nGpus (GPUs one thread drives)
  int iters = 0;            // timed iterations per size ("iters: N"); 0 if not printed
};

// The timed "iters: N" of nccl-tests' parameter line (not "warmup iters" nor
// "agg iters"), or 0.
int timed_iters(const std::string& line) {
  std::istringstream fields(line);
  std::string prev, f;
  while (fields >> f) {
    if (f == "iters:" && prev != "warmup" && prev != "agg" && fields >> f) return std::stoi(f);
    prev = f;
  }
  return 0;
}

// Reads the nccl-tests rows (size, count, type, redop, root, time, algbw,
// busbw, ...) and the "nGpus N" and "iters: N" of the parameter line; comments are skipped.
// Not the project's log reader (sim/io/nccl_tests_log.h): it refuses a table that ends
// without '# Avg bus bandwidth', and several fixtures are excerpts cut so by their authors.
Published read_table(const std::string& name) {
  Published p;
  std::ifstream in(std::string(FLEETSIM_SOURCE_DIR) + "/tests/fixtures/nccl-tests/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::string line;
  while (std::getline(in, line)) {
    if (const size_t at = line.find("nGpus "); line.rfind("# nThread", 0) == 0 && at != std::string::npos) {
      p.gpus_per_thread = std::stoi(line.substr(at + 6));
      p.iters = timed_iters(line);
      continue;
    }
    std::istringstream fields(line);
    std::vector<std::string> t;
    for (std::string f; fields >> f;) t.push_back(f);
    if (t.size() < 12 || t[0].find_first_not_of("0123456789") != std::string::npos) continue;
    Row r;
    r.bytes = std::stoll(t[0]);
    r.time_us = std::stod(t[5]);
    r.busbw = std::stod(t[7]);
    if (r.bytes > 0) p.rows.push_back(r);
  }
  return p;
}

struct Case {
  const char* file;
  const char* system;  // preset
  int nodes;
  Coll coll;
  const char* not_met;  // nullptr: bounds asserted; else why the table is reported only
  const char* version = "2.30";  // NCCL constants the table is compared with
  int gpus_per_node = 0;         // GPUs per node the table ran on; 0: the preset's 8
  // The all-reduce table the same cluster published (same source, hosts and
  // hardware), or nullptr: the table is also scored with the model calibrated
  // on that sibling as `fleetsim calibrate --from-nccl-tests` calibrates it.
  const char* sibling_all_reduce = nullptr;
  // The bound is met by the sibling-calibrated model (not by the model alone,
  // `not_met` says why) and asserted on it.
  bool met_calibrated = false;
};

// The 4 x 8 H100 cluster of ZiyanIshani/vpbenchmarking (hosts g138, g205, g244,
// g150; 8 x 400 Gb/s IB per node; NCCL 2.24.3): its all-reduce, all-gather,
// reduce and broadcast tables were run on the same four hosts within two days.
constexpr const char* kVpbench4x8AllReduce = "h100_4x8_all_reduce_nccl2.24.3.txt";

// Tables by system. Constants of the execution model were fitted on
// h100_1x8_all_reduce_nccl2.24.3 only; every other table is held out. A table
// is timed with the constants of its NCCL release where it predates 2.19 (the
// oldest set is 2.18); the others use 2.30, whose NVLS formula the fabric
// figures are calibrated to. The OCI
// nodes' 16 x 200 Gb/s RoCE is modelled as the preset's 8 x 400 Gb/s (the same
// NIC bandwidth per GPU; the fabric has at most one NIC per GPU).
const Case kCases[] = {
    {"h100_1x8_all_reduce_nccl2.24.3.txt", "dgx-h100", 1, Coll::kAllReduce, nullptr},
    {"h100_1x8_all_reduce_nccl-tests-290.txt", "dgx-h100", 1, Coll::kAllReduce, nullptr},
    {"h100_4x8_all_reduce_nccl2.24.3.txt", "dgx-h100", 4, Coll::kAllReduce, nullptr},
    {"h100_2x8_all_reduce_oci_nccl2.21.5.txt", "dgx-h100", 2, Coll::kAllReduce, nullptr},
    {"h200_2x8_all_reduce_oci_nccl2.27.5.txt", "dgx-h200", 2, Coll::kAllReduce, nullptr},
    {"a100_1x8_all_reduce_oci.txt", "dgx-a100", 1, Coll::kAllReduce,
     "NCCL 2.9-2.11 (container), timed with the oldest set, 2.18. Its flat 32 us from 64 B to 32 KiB is the host "
     "floor of the -g 8 launch path, predicted (33.2 us) from the 8 x H100 -g 8 table; from 64 KiB the model is "
     "above that floor: 64-128 KiB 18-24% slow (1-4 Ring LL channels), 512 KiB - 32 MiB 10-44% fast, which no "
     "per-call term or NCCL constant of the era explains: the 24 channels are HGX A100's, LL128 off leaves Simple "
     "1.29-1.48x fast at 2-32 MiB, and the era's default launch mode is one launch per GPU (PARALLEL)",
     "2.18"},
    {"h100_4x8_all_gather_nccl2.24.3.txt", "dgx-h100", 4, Coll::kAllGather,
     "4-64 MiB take 1.24 x the Ring/Simple time (4, 8, 16, 64 MiB) where the Ring/LL128 NCCL 2.24 picks would "
     "give 2.1-1.5 x: the ring's LL128 looks off on this cluster (NCCL enables it per graph only when the GPU-NIC "
     "path is PXN or closer on sm90; the ring's path is not logged), while the same cluster's all-reduce fits "
     "Tree/LL128 at 256 KiB-1 MiB. Even with LL128 off and 8 x 40 GB/s NICs (plateau 323 GB/s) the median is 18%. "
     "NCCL's LL128 rule (path <= PXB, or <= PXN on sm90+) keeps it on for a NIC-per-GPU HGX, so it is not modelled",
     "2.30", 0, kVpbench4x8AllReduce},
    {"h100_4x8_reduce_nccl2.24.3.txt", "dgx-h100", 4, Coll::kReduce,
     "a ring chain of 31 hops, timed as one op with NCCL's nRanks-hop latency of rings without sameChannels (93 us "
     "LL, 142 us LL128): 256 KiB - 4 MiB within 2-26%, 64-128 KiB 55-68% slow, 18-53% fast from 8 MiB. nccl-tests' "
     "20 back-to-back iterations pipeline along the chain only up to 4 KiB (8-11 us, 0.92-1.23 x the pipelined "
     "time); from 8 KiB the table grows at about 4 GB/s per op to one op's time at 256 KiB (LL crosses a network "
     "hop a step at a time through host memory, net.cc; its rate has no source), so scored pipelined it would be "
     "114% median. From 8 MiB the chain runs at 290-294 GB/s per added byte "
     "against 323-331 for the same NICs' rings: a fixed cost per 512 KiB chain slice would explain it (about 5 us, "
     "solved from these tables, so not a term). The cluster's broadcast table has the same profile",
     "2.30", 0, kVpbench4x8AllReduce},
    {"b200_2x8_all_gather_gke_nccl2.26.6.txt", "hgx-b200", 2, Coll::kAllGather,
     "the table is 4-35x slower than the model from 64 KiB to 256 MiB and has a floor of 246-320 us even at 1-32 KiB "
     "(the model: 28 us at 64 KiB); its times are not monotonic (4 MiB in 934 us, faster than 2 MiB in 1754 us; 32 MiB "
     "faster than 16 MiB) and in-place differs from out-of-place by up to a third. It ran through Google's gIB network "
     "plugin on GKE; the plateau from 2 GiB is 260 GB/s against the model's 383 (8 x 48 GB/s of 400 Gb/s NICs)"},
    {"h100_2x8_all_reduce_hgx_nccl2.26.2.txt", "dgx-h100", 2, Coll::kAllReduce, nullptr},
    {"h100_4x8_all_reduce_vm_nccl2.26.2.txt", "dgx-h100", 4, Coll::kAllReduce, nullptr},
    {"h100_8x8_all_reduce_ib.txt", "dgx-h100", 8, Coll::kAllReduce, nullptr},
    {"b200_1x2_all_gather_gke_nccl2.26.6.txt", "hgx-b200", 1, Coll::kAllGather,
     "two GPUs of a node, rows from 64 MiB only: the table takes 1.5-1.7x the model's Ring/Simple time and plateaus at "
     "483 GB/s busbw (965 GB/s algbw) at 8 GiB where the model reaches 719 (80% of NVLink5's 900 GB/s); its in-place "
     "column is 7-17% faster than out-of-place (564 GB/s at 8 GiB), still 22% under the model", "2.30", 2},
    {"b200_2x1_all_gather_gke_nccl2.26.6.txt", "hgx-b200", 2, Coll::kAllGather,
     "one GPU on each of two nodes (each pod holds two 400 Gb/s RoCE NICs; the model gives one GPU one NIC), gIB "
     "plugin: the table takes 1.3-2.0x the model's time from 64 KiB and plateaus at 36.7 GB/s at 1 GiB against the "
     "model's 47.9 (48 GB/s per NIC); its in-place column reaches 45.1 GB/s, 23% faster than out-of-place at 1 GiB",
     "2.30", 1},
    // -g 8, one thread launching 8 GPUs: flat at the host floor to 256 KiB, then 35 -> 41 us as Ring/LL goes
    // from 2 to 24 channels, 41-42 us at 1-4 MiB. Held out for the floor and its per-channel part (both fitted
    // on the -g 8 all-reduce table); the worst rows are 8-16 MiB, where the model's Ring/LL128 is slow.
    {"h100_1x8_reduce_scatter_together_nccl2.26.2.txt", "dgx-h100", 1, Coll::kReduceScatter, nullptr},
    {"h100_1x8_all_gather_together_nccl2.26.2.txt", "dgx-h100", 1, Coll::kAllGather, nullptr},
    {"h100_1x8_alltoall_xxrjun_nccl2.28.7.txt", "dgx-h100", 1, Coll::kAllToAll, nullptr},
    {"h100_4x8_broadcast_nccl2.24.3.txt", "dgx-h100", 4, Coll::kBroadcast,
     "the reduce table's cluster and profile: a ring chain of 31 hops timed as one op with nRanks-hop latency is "
     "54-70% slow at 64-128 KiB (29-48 us measured, 98-104 modelled) and 29-60% fast from 8 MiB. Its back-to-back "
     "iterations pipeline only up to 4 KiB (9-14 us, 1.02-1.51 x the pipelined time), not at the sizes scored "
     "(112% median if they did); the chain plateaus at 286 GB/s (201.6 at 512 MiB, below 256 MiB's 230) against "
     "the model's 376 (8 x 48 GB/s NICs) and the same NICs' rings' 323-331",
     "2.30", 0, kVpbench4x8AllReduce},
    {"h100_1x8_reduce_scatter_xxrjun_nccl2.28.7.txt", "dgx-h100", 1, Coll::kReduceScatter, nullptr},
    {"h100_1x8_all_gather_xxrjun_nccl2.28.7.txt", "dgx-h100", 1, Coll::kAllGather, nullptr},
    // A second operator's A100 tables, one process per GPU, rows from 32 MiB: held out like the
    // rest, and timed with the 2.18 set (both releases predate 2.19).
    {"a100_1x8_all_reduce_gcm_nccl2.16.2.txt", "dgx-a100", 1, Coll::kAllReduce, nullptr, "2.18"},
    {"a100_2x8_all_reduce_gcm_nccl2.12.12.txt", "dgx-a100", 2, Coll::kAllReduce, nullptr, "2.18"},
    {"h200_2x1_all_reduce_gke_dranet.txt", "dgx-h200", 2, Coll::kAllReduce,
     "one H200 and one RDMA NIC on each of two GKE nodes, through Google's gIB plugin, NCCL not printed: the table "
     "takes 1.5-2.9x the model's Ring time from 64 KiB (1.5x from 64 MiB), is flat at 20.2-20.8 GB/s from 8 to 32 MiB and jumps to 29.8 "
     "at 64 MiB, and plateaus at 31.9 GB/s from 1 GiB against the model's 48.0 (one 400 Gb/s NIC); the same plugin's "
     "two-node B200 table (b200_2x1) also plateaus a quarter under the model (36.7 GB/s)",
     "2.30", 1},
};

struct Errors {
  double median = 0, worst = 0;
  size_t n = 0;
};

Errors errors_of(std::vector<double> e) {
  Errors out;
  out.n = e.size();
  if (e.empty()) return out;
  std::sort(e.begin(), e.end());
  out.median = e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
  out.worst = e.back();
  return out;
}

bool is_chain(Coll coll) { return coll == Coll::kBroadcast || coll == Coll::kReduce; }

// What nccl-tests would print for a chain (Ring broadcast/reduce, timed by
// `e`) if its back-to-back iterations pipelined along the chain. nccl-tests'
// timing loop (src/common.cu, BenchTime) starts a timer, issues `iters` ops
// without waiting, waits for the stream once, divides by `iters` and averages
// that over the ranks. A member starts op k+1 once it has forwarded op k, and
// its predecessor sent op k+1 one hop before, so in steady state every member
// ends an op per `base + S/bw` (the hop latencies overlap the next ops); only
// the first op pays the member's p + 1 hops (p = 0 .. n-1). The hop is the
// tuning latency's (nRanks hops without sameChannels, as here).
double pipelined_chain_us(const Estimate& e, const Constants& c, int ranks, int iters) {
  const double base = c.base_lat_us[static_cast<int>(e.algo)][static_cast<int>(e.proto)];
  const double hop = (e.lat_us - base) / ranks;
  const double data = e.time_us - e.lat_us;
  return base + data + 0.5 * (ranks + 1) * hop / std::max(1, iters);
}

// The model on `c`'s machine, or with `cal` (nullptr: none) applied as a
// scenario's `calibration:` applies it: its fabric figures set on the preset,
// its NCCL constants, and its latency offset for `c`'s collective only (a
// calibration holds one per measured collective; others get none). With
// `pipelined` (chains only) each row is timed as pipelined_chain_us().
Errors compare(const Case& c, const Published& p, const std::string& timing,
               const NcclCalibration* cal = nullptr, bool pipelined = false) {
  auto f = fabric_preset(c.system);
  EXPECT_TRUE(f.has_value());
  f->nodes = c.nodes;
  if (c.gpus_per_node > 0) f->gpus_per_node = c.gpus_per_node;
  Options o;
  o.timing = timing;
  o.version = cal != nullptr ? cal->version : c.version;
  o.gpus_per_thread = p.gpus_per_thread;
  auto m = Model::create(cal != nullptr ? apply_nccl_figures(*cal, *f) : *f, o);
  EXPECT_TRUE(m.ok());
  const std::optional<OpKind> op = collective_from_name(coll_name(c.coll));
  const double offset_us = cal != nullptr && op ? cal->offset_us(*op) : 0.0;
  const GroupShape s = m->full_shape();
  std::vector<double> errs;
  for (const Row& r : p.rows) {
    if (r.bytes < 64 * 1024) continue;
    const Estimate e = m->estimate(c.coll, r.bytes, s);
    const double single_us = pipelined ? pipelined_chain_us(e, m->constants(), s.ranks, p.iters) : e.time_us;
    const double time_us = std::max(0.0, single_us + offset_us);
    const double busbw = static_cast<double>(r.bytes) / (time_us * 1e3) * busbw_factor(c.coll, s.ranks);
    errs.push_back(std::abs(busbw - r.busbw) / r.busbw);
  }
  return errors_of(errs);
}

// `fleetsim calibrate --from-nccl-tests SIBLING --system S --nodes N` through
// its library function (the leave-one-size-out refits only report, so they are
// skipped); one fit per sibling table. nullptr (and a failure) if it fails.
const NcclCalibration* sibling_calibration(const Case& c) {
  static std::map<std::string, NcclCalibration> fitted;
  if (c.sibling_all_reduce == nullptr) return nullptr;
  if (auto it = fitted.find(c.sibling_all_reduce); it != fitted.end()) return &it->second;
  validate::LogCalibrateSpec spec;
  spec.files = {std::string(FLEETSIM_SOURCE_DIR) + "/tests/fixtures/nccl-tests/" + c.sibling_all_reduce};
  spec.system = c.system;
  spec.nodes = c.nodes;
  spec.leave_one_out = false;
  auto r = validate::calibrate_from_nccl_tests(spec);
  if (!r.ok() || !r->calibration.nccl) {
    ADD_FAILURE() << c.sibling_all_reduce << ": " << (r.ok() ? "no nccl section" : r.errors()[0].to_string());
    return nullptr;
  }
  return &fitted.emplace(c.sibling_all_reduce, *r->calibration.nccl).first->second;
}

bool meets_bound(const Case& c, const Errors& e) {
  return c.nodes == 1 ? e.median <= 0.10 && e.worst <= 0.25 : e.median <= 0.15;
}

TEST(PublishedTables, BusbwErrorFrom64KiB) {
  for (const Case& c : kCases) {
    const Published p = read_table(c.file);
    ASSERT_GE(p.rows.size(), 5u) << c.file;
    const Errors before = compare(c, p, "tuning");
    const Errors after = compare(c, p, "exec");
    const char* verdict = c.not_met == nullptr ? "" : c.met_calibrated ? "  (met calibrated on the cluster's all-reduce)"
                                                                       : "  (bounds not met, reported)";
    std::printf("[ published ] %-40s %d node(s) %-9s %2zu sizes  before: median %5.1f%% worst %6.1f%%  "
                "after: median %5.1f%% worst %6.1f%%%s\n", c.file, c.nodes, coll_name(c.coll), after.n,
                100 * before.median, 100 * before.worst, 100 * after.median, 100 * after.worst, verdict);
    if (is_chain(c.coll)) {
      const Errors piped = compare(c, p, "exec", nullptr, true);
      std::printf("[ published ]   if its %d back-to-back iterations pipelined along the chain: median %5.1f%% "
                  "worst %6.1f%% (they do not from 8 KiB: ChainTablesPipelineOnlyTinyOps)\n", p.iters,
                  100 * piped.median, 100 * piped.worst);
    }
    if (const NcclCalibration* cal = sibling_calibration(c)) {
      const Errors calibrated = compare(c, p, "exec", cal);
      std::printf("[ published ]   calibrated on the cluster's all-reduce (%s, NCCL %s constants): median %5.1f%% "
                  "worst %6.1f%%\n", c.sibling_all_reduce, cal->version.c_str(), 100 * calibrated.median,
                  100 * calibrated.worst);
      if (c.met_calibrated) {
        EXPECT_TRUE(meets_bound(c, calibrated)) << c.file;
        continue;
      }
    }
    if (c.not_met != nullptr) {
      std::printf("[ published ]   not met: %s\n", c.not_met);
      continue;
    }
    if (c.nodes == 1) {
      EXPECT_LE(after.median, 0.10) << c.file;
      EXPECT_LE(after.worst, 0.25) << c.file;
      // The -g 8 fit table with its host floor and the floor's per-channel part
      // (17.7% worst without the floor, 11.3% without the per-channel part).
      if (std::string(c.file) == "h100_1x8_all_reduce_nccl2.24.3.txt") {
        EXPECT_LE(after.worst, 0.07) << c.file;
      }
      // The -g 8 reduce-scatter and all-gather, held out: 25.8% and 29.1% worst
      // with a flat host floor (at 1-2 MiB), 14.3% and 19.8% with its per-channel part.
      if (std::string(c.file) == "h100_1x8_reduce_scatter_together_nccl2.26.2.txt") {
        EXPECT_LE(after.worst, 0.15) << c.file;
      }
      if (std::string(c.file) == "h100_1x8_all_gather_together_nccl2.26.2.txt") {
        EXPECT_LE(after.worst, 0.21) << c.file;
      }
      // The all-to-all with NCCL's P2P channel plan (11.6% / 34.1% without it).
      if (std::string(c.file) == "h100_1x8_alltoall_xxrjun_nccl2.28.7.txt") {
        EXPECT_LE(after.median, 0.06) << c.file;
        EXPECT_LE(after.worst, 0.20) << c.file;
      }
    } else {
      EXPECT_LE(after.median, 0.15) << c.file;
    }
  }
}

// The tables that are only reported stay listed as failing: if the model (or,
// for a table with a sibling all-reduce, the model calibrated on it) comes to
// meet one, the list must be updated (so the bound is then asserted).
TEST(PublishedTables, ReportedTablesStillMissTheirBound) {
  for (const Case& c : kCases) {
    if (c.not_met == nullptr) continue;
    const Published p = read_table(c.file);
    EXPECT_FALSE(meets_bound(c, compare(c, p, "exec"))) << c.file << " now meets its bound: assert it";
    if (c.met_calibrated) continue;
    if (const NcclCalibration* cal = sibling_calibration(c)) {
      EXPECT_FALSE(meets_bound(c, compare(c, p, "exec", cal)))
          << c.file << " now meets its bound calibrated on " << c.sibling_all_reduce << ": assert it";
    }
  }
}

// nccl-tests times back-to-back iterations, so a chain's ops could overlap
// (pipelined_chain_us). The two 4 x 8 H100 chain tables show they do only for
// tiny ops: up to 4 KiB each table is within 0.9-1.6x of the pipelined time and
// under a fifth of one op's; from 256 KiB to 4 MiB it takes at least 1.8x the
// pipelined time and 0.7-1.05x one op's (nRanks hops, the tuning latency), so
// the rows scored from 64 KiB are compared with one op, as
// BusbwErrorFrom64KiB does. Between (8-128 KiB) the table leaves the pipelined
// time at about 4 GB/s per op, a rate no term of the model gives.
TEST(PublishedTables, ChainTablesPipelineOnlyTinyOps) {
  for (const char* file : {"h100_4x8_reduce_nccl2.24.3.txt", "h100_4x8_broadcast_nccl2.24.3.txt"}) {
    const Published p = read_table(file);
    ASSERT_EQ(p.iters, 20) << file;
    auto f = fabric_preset("dgx-h100");
    ASSERT_TRUE(f.has_value());
    f->nodes = 4;
    auto m = Model::create(*f, Options{});
    ASSERT_TRUE(m.ok());
    const GroupShape s = m->full_shape();
    const Coll coll = std::string(file).find("reduce") != std::string::npos ? Coll::kReduce : Coll::kBroadcast;
    int tiny = 0, mid = 0;
    for (const Row& r : p.rows) {
      const Estimate e = m->estimate(coll, r.bytes, s);
      ASSERT_TRUE(e.ok && e.algo == Algo::kRing) << file << " " << r.bytes;
      const double vs_piped = r.time_us / pipelined_chain_us(e, m->constants(), s.ranks, p.iters);
      const double vs_single = r.time_us / e.time_us;
      if (r.bytes <= 4096) {
        ++tiny;
        EXPECT_GE(vs_piped, 0.9) << file << " " << r.bytes;
        EXPECT_LE(vs_piped, 1.6) << file << " " << r.bytes;
        EXPECT_LT(vs_single, 0.2) << file << " " << r.bytes;
      } else if (r.bytes >= 256 * 1024 && r.bytes <= 4 * 1024 * 1024) {
        ++mid;
        EXPECT_GE(vs_piped, 1.8) << file << " " << r.bytes;
        EXPECT_GE(vs_single, 0.7) << file << " " << r.bytes;
        EXPECT_LE(vs_single, 1.05) << file << " " << r.bytes;
      }
    }
    EXPECT_EQ(tiny, 10) << file;
    EXPECT_EQ(mid, 5) << file;
  }
}

// The execution model is what the analytic cost model and the CLI use; NCCL's
// own estimate stays available and is unchanged by it.
TEST(PublishedTables, TuningTimingIsNcclsOwnEstimate) {
  auto f = fabric_preset("dgx-h100");
  ASSERT_TRUE(f.has_value());
  Options tuning;
  tuning.timing = "tuning";
  auto m = Model::create(*f, tuning);
  ASSERT_TRUE(m.ok());
  const Estimate e = m->estimate(Coll::kAllReduce, 65536, m->full_shape());
  EXPECT_NEAR(e.time_us, 15.81, 0.01);  // Ring/LL: 6.6 + 14 x 0.6 + 64 KiB / 80.57 GB/s
  EXPECT_DOUBLE_EQ(e.time_us, e.tuning_us);
  Options bad;
  bad.timing = "fast";
  EXPECT_FALSE(Model::create(*f, bad).ok());
}

}  // namespace
}  // namespace fleetsim::nccl
