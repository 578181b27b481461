// NCCL's own cost model (src/graph/tuning.cc + enqueue.cc's argmin selection):
// time = lat * latCount + nBytes / (1000 * bw) in µs, per (algorithm, protocol),
// with the tree correction factors and the ring plateau factor. Alltoall and
// send/recv are not in tuning.cc; they are modelled as α-β point-to-point
// transfers over the slowest path. Formulas: docs/collectives.md ("The model").
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/status.h"
#include "sim/model/nccl_fabric.h"
#include "sim/model/nccl_tables.h"

namespace fleetsim::nccl {

// The collectives, in nccl-tests' sense of their size S (see Op::bytes).
enum class Coll : uint8_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kAllToAll, kSendRecv };
const char* coll_name(Coll c);                        // "allreduce", ...
std::optional<Coll> coll_from_name(std::string_view name);  // also "all_reduce", "sendrecv"
std::optional<Coll> coll_from_op(OpKind op);          // barrier -> allreduce; send/recv -> sendrecv

// How the user steers NCCL, as environment variables do.
struct Options {
  std::string version = "2.30";  // NCCL release whose constants to use
  std::string algo;              // NCCL_ALGO: "ring,tree", "^nvls", "" = all. Only disables entries.
  std::string proto;             // NCCL_PROTO: "ll,ll128", "^ll128", "" = all
  // How a choice is timed: "exec" (the execution model, nccl_exec.h) or
  // "tuning" (NCCL's own lat + S/bw, as NCCL_DEBUG=TUNING prints it).
  std::string timing = "exec";
  // GPUs one host thread launches (nccl-tests -g N): their kernels start one
  // after another. 1 = one process per GPU, as training jobs run.
  int gpus_per_thread = 1;
};

// NCCL_ALGO / NCCL_PROTO lists -> bit masks over Algo / Proto indices.
// Returns "" on success, else a one-line message naming what was expected.
std::string parse_algo_list(std::string_view text, uint32_t* mask);
std::string parse_proto_list(std::string_view text, uint32_t* mask);

// NCCL's per-collective tables: latency (µs) and algorithm bandwidth (GB/s) per
// (algorithm, protocol) for one group shape. bw == 0 means disabled.
struct Table {
  std::array<std::array<double, kNumProtos>, kNumAlgos> lat_us{};
  std::array<std::array<double, kNumProtos>, kNumAlgos> bw_GBps{};
  // The same bandwidth before the absolute LL caps (llMaxBws): what scales
  // with the channels an op really uses (nccl_exec.h). >= bw_GBps.
  std::array<std::array<double, kNumProtos>, kNumAlgos> bw_raw_GBps{};
};

// One (algorithm, protocol) for one size: what NCCL_DEBUG=TUNING would print.
struct Estimate {
  bool ok = false;   // false: nothing enabled for this op
  Algo algo = Algo::kRing;
  Proto proto = Proto::kSimple;
  double time_us = 0;
  double lat_us = 0;
  double bw_GBps = 0;  // algorithm bandwidth after size-dependent corrections
  double tuning_us = 0;  // NCCL's own estimate of the choice (lat + S/bw)
};

// Builds the table for `coll` from the fabric's graphs (pure; no allocation).
Table tuning_table(const Fabric& f, const Graphs& g, const Constants& c, Coll coll,
                   const GroupShape& s);
// Zeroes the entries whose algorithm or protocol bit is not in the masks.
void apply_masks(Table* t, uint32_t algo_mask, uint32_t proto_mask);
// The two terms of ncclTopoGetAlgoTime for one entry and `bytes`: the latency
// (with the ring plateau factor) and the bandwidth (with the tree correction).
struct TimeParts {
  bool ok = false;  // false: the entry is disabled
  double lat_us = 0;
  double bw_GBps = 0;
  double bw_raw_GBps = 0;  // bw_GBps before the absolute LL caps (Table::bw_raw_GBps)
};
TimeParts algo_time_parts(const Table& t, const Fabric& f, const Graphs& g, const Constants& c, Coll coll,
                          Algo a, Proto p, int64_t bytes, const GroupShape& s);
// ncclTopoGetAlgoTime for one entry and `bytes` (latCount 1). < 0 if disabled.
double algo_time_us(const Table& t, const Fabric& f, const Graphs& g, const Constants& c, Coll coll,
                    Algo a, Proto p, int64_t bytes, const GroupShape& s);
// The argmin over enabled entries; ties go to the lower (algo, proto) index as in NCCL.
Estimate select(const Table& t, const Fabric& f, const Graphs& g, const Constants& c, Coll coll,
                int64_t bytes, const GroupShape& s);

// The model for one fabric, NCCL version and set of overrides. Immutable and
// cheap to copy; every method is const and thread-safe.
class Model {
 public:
  // Validates the options (version, algo and proto lists).
  static Result<Model> create(const Fabric& fabric, const Options& options);

  // NCCL's choice and its predicted time for `bytes` (nccl-tests' S) on `shape`.
  Estimate estimate(Coll coll, int64_t bytes, const GroupShape& shape) const;
  // The same choice (made on the healthy fabric, as NCCL tunes at init), timed
  // on a fabric with `degradations` applied: a ring runs at its slowest link.
  Estimate estimate_degraded(Coll coll, int64_t bytes, const GroupShape& shape,
                             const std::vector<LinkDegradation>& degradations) const;
  // The masked table for one collective (not for alltoall/sendrecv).
  Table table(Coll coll, const GroupShape& shape) const;

  const Fabric& fabric() const { return fabric_; }
  const Constants& constants() const { return constants_; }
  // The whole fabric as one group: ranks = nodes * gpus_per_node.
  GroupShape full_shape() const;

 private:
  Model(Fabric f, Constants c, uint32_t algo_mask, uint32_t proto_mask, bool exec_timing, int gpus_per_thread)
      : fabric_(std::move(f)), constants_(std::move(c)), algo_mask_(algo_mask), proto_mask_(proto_mask),
        exec_timing_(exec_timing), gpus_per_thread_(gpus_per_thread) {}
  // Replaces the tuning time of a chosen entry by its execution time.
  void time_choice(const Table& t, const Graphs& g, Coll coll, int64_t bytes, const GroupShape& s,
                   Estimate* e) const;
  Estimate estimate_on(const Graphs& g, Coll coll, int64_t bytes, const GroupShape& s,
                       const Estimate* forced) const;

  Fabric fabric_;
  Constants constants_;
  uint32_t algo_mask_;
  uint32_t proto_mask_;
  bool exec_timing_;
  int gpus_per_thread_;
};

// Alltoall and send/recv as α-β point-to-point transfers: α = Ring base + one hop
// of the slowest path's hwLat (LL up to 16 KiB per peer, else Simple); β over
// NVLink inside a node and the rank's share of its node's NICs across nodes
// (alltoall: both at once, the slower wins; the leaf/spine oversubscription
// divides the share of traffic leaving a leaf).
Estimate p2p_estimate(const Fabric& f, const Graphs& g, const Constants& c, Coll coll, int64_t bytes,
                      const GroupShape& s);

// nccl-tests' busbw factor for the op on n ranks (allreduce 2(n-1)/n, ...).
double busbw_factor(Coll coll, int ranks);

// NCCL's choice as the cost models ask it: the scenario's NCCL_ALGO/NCCL_PROTO
// mask, falling back to the unmasked choice for an op the mask disabled entirely
// (where NCCL would error). Shared by the analytic and the step cost models.
class TunedModel {
 public:
  // nullopt if `options` are invalid (Model::create gives the diagnostic).
  static std::optional<TunedModel> create(const Fabric& fabric, const Options& options);
  // The shape the models expect: at least one node, ranks_per_node in 1..ranks.
  static GroupShape normalized(const GroupShape& shape);
  // `bytes` as timed: a barrier moves one float.
  static int64_t op_bytes(OpKind op, int64_t bytes) { return op == OpKind::kBarrier ? std::max<int64_t>(bytes, 4) : bytes; }
  // The healthy-fabric choice and time (degraded empty) or the degraded time of
  // that choice. REQUIRES: `shape` normalized, `bytes` from op_bytes.
  Estimate estimate(Coll coll, int64_t bytes, const GroupShape& shape,
                    const std::vector<LinkDegradation>& degraded = {}) const;
  const Model& masked() const { return masked_; }

 private:
  TunedModel(Model masked, Model unmasked) : masked_(std::move(masked)), unmasked_(std::move(unmasked)) {}
  Model masked_;
  Model unmasked_;
};

// A fleetsim::CostModel backed by Model. nullptr if `options` are invalid
// (check them with Model::create first to get the diagnostic).
std::unique_ptr<CostModel> make_nccl_model(const Fabric& fabric, const Options& options);

}  // namespace fleetsim::nccl

namespace fleetsim {
// The names the rest of the simulator uses.
using NcclFabric = nccl::Fabric;
using NcclOptions = nccl::Options;
using nccl::fabric_from_fleet;
using nccl::make_nccl_model;
}  // namespace fleetsim
