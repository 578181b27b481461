// The step-level collective model (job.collective_model: steps): NCCL's ring run
// transfer by transfer on the group's links, so a degraded link or a late rank
// propagates through the pipeline. Rates and latencies come from the NCCL tuning
// model (nccl_model.h), so on a healthy fabric the two agree. docs/collectives.md
// ("The step model") explains the schedule, its costs and its limits.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fleetsim/cost_model.h"
#include "sim/model/nccl_model.h"

namespace fleetsim::nccl {

// One collective as NCCL's Ring would run it, reduced to what the step timing
// needs. Members are in group order; hop i goes from member i to member i+1 (mod n).
struct StepSchedule {
  enum class Kind : uint8_t {
    kRing,   // allreduce (2(n-1) steps), allgather and reducescatter (n-1): every member sends every step
    kChain,  // broadcast, reduce: a pipelined chain of n-1 hops
  };
  Kind kind = Kind::kRing;
  int ranks = 0;        // n >= 2
  int steps = 0;        // kRing: transfer steps per member; kChain: 1
  int chunks = 1;       // K: a step's piece (kRing) or a channel's data (kChain) streams as K chunks
  // NCCL's order and buffers: a ring's loop carries `loop_chunks` chunks (G) of
  // every step's piece through all the steps before the next loop starts, and a
  // connection (ring or chain) holds `slots` chunks (b > G): a send reuses the
  // slot of the transfer b before it, once the receiver has forwarded (or
  // received) that one.
  int loop_chunks = 1;  // kRing: Simple 2 (a 2-slice chunk), LL/LL128 1
  int slots = 8;        // NCCL_STEPS (8) buffer steps a connection: Simple ring 4 slices, else 8 chunks
  int chain_first = 0;  // kChain: the member that sends first (broadcast: root; reduce: root + 1)
  double base_us = 0;   // NCCL's base latency, paid by each member from its own arrival
  double step_us = 0;   // sender-side cost of one step (kRing) or of starting one hop (kChain)
  Proto proto = Proto::kSimple;
  int channels = 0;     // NCCL's ring channels; data is split evenly over them
  // Channel classes: channels whose hops all run at the same rates are timed
  // once. chunk_us[k][i] = µs one chunk takes on hop i in class k.
  std::vector<std::vector<double>> chunk_us;
  std::vector<int> class_channels;  // channels in each class (sums to `channels`)

  // Transfers per channel class (steps x members x chunks): the number of events.
  int64_t transfers() const;
};

// What the step model needs to know about one collective call.
struct StepRequest {
  Coll coll = Coll::kAllReduce;
  int64_t bytes = 0;  // nccl-tests' S
  GroupShape shape;   // members sit node by node, ranks_per_node to a node (the plan's layout)
  std::vector<LinkDegradation> degraded;
  int root = 0;       // broadcast/reduce: group index of the root
};

// Caps on the schedule's size (documented in docs/collectives.md).
inline constexpr int kMaxRingChunks = 64;           // chunks per step piece
inline constexpr int kMaxChainChunks = 1024;        // chunks per channel in a chain
inline constexpr int64_t kMaxTransfers = 1 << 22;   // transfers per channel class

// The schedule of `req` when NCCL runs it as a Ring with protocol `proto`
// (the choice made on the healthy fabric). REQUIRES: shape.ranks >= 2 and
// coll is not alltoall/sendrecv.
StepSchedule ring_schedule(const Model& model, const StepRequest& req, Proto proto);

// Longest paths: span_us[i] = the most time completion can come after member
// i's arrival (max over channel classes), so that with arrivals a_i
//   completion = max_i (a_i + span_us[i]).
// A ring's spans are evaluated in exact integer time (2^-40 ns units): with one
// chunk a step (K = 1, so every ring past 1,448 members) by the recurrence's closed
// form in O(members x distinct hop times) per channel class, otherwise by the
// recurrence (O(transfers) <= kMaxTransfers per class); a chain's from its
// recurrence (O(transfers) per class).
std::vector<double> completion_spans_us(const StepSchedule& s);

// The same spans from the longest-path recurrence over every transfer
// (O(transfers) per class, the same exact arithmetic for a ring): the reference
// the closed form is tested against; equal to it in every bit.
std::vector<double> completion_spans_reference_us(const StepSchedule& s);

// The same recurrence run forward: the completion time (µs) for member
// arrivals `arrival_us` (group order). O(transfers) per class.
double simulate_us(const StepSchedule& s, std::span<const double> arrival_us);

// The CostModel for job.collective_model: steps. Ring choices of NCCL's model
// are timed step by step from the members' arrivals; other choices (Tree, NVLS,
// CollNet, PAT) and alltoall/send/recv use the analytic time from the last
// arrival. nullptr if `options` are invalid.
std::unique_ptr<CostModel> make_ring_steps_model(const Fabric& fabric, const Options& options);

}  // namespace fleetsim::nccl
