// How long a collective takes once every member has arrived. A CostModel is a
// const, pure function of (op, bytes, group shape): no state, no randomness, safe
// to share between threads. The engine asks it once per matched collective.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "fleetsim/scenario.h"
#include "fleetsim/time.h"

namespace fleetsim {

// Where a process group's members sit on the fleet.
struct GroupShape {
  int ranks = 1;           // members
  int nodes = 1;           // distinct nodes the members are on
  int ranks_per_node = 1;  // most members on any one node
};

// A link that is slower than the fabric NCCL tuned for (a fault): the algorithm
// NCCL picked at init stays, its time stretches. `node` and `index` are relative
// to the group: node 0 is the group's first node (in rank order), and a NIC
// index counts only the NICs the group's members on that node use.
enum class DegradeKind : uint8_t {
  kNicRate,       // NIC `index` on `node` runs at `fraction` of its rate
  kGpuDirectOff,  // every NIC on `node` stages through host memory
  kRemoteNuma,    // NIC `index` on `node` is on the other CPU socket: no GPUDirect, host-staged
  kNvlinkRate,    // GPU `index` on `node` has `fraction` of its NVLink bandwidth
};
struct LinkDegradation {
  DegradeKind kind = DegradeKind::kNicRate;
  int node = 0;
  int index = 0;
  double fraction = 1.0;
};

class CostModel {
 public:
  virtual ~CostModel() = default;

  // Time from the last member's arrival to completion for every member.
  // `bytes` is nccl-tests' S for the op (see Op::bytes). REQUIRES: is_collective(op),
  // bytes >= 0, shape.ranks >= 1. A one-member group costs only the launch latency.
  virtual Duration collective_time(OpKind op, int64_t bytes, const GroupShape& shape) const = 0;

  // The same on a group with degraded links: "a ring runs at its slowest link".
  // The default ignores degradations (models that know no links).
  virtual Duration collective_time_degraded(OpKind op, int64_t bytes, const GroupShape& shape,
                                            const std::vector<LinkDegradation>& /*degraded*/) const {
    return collective_time(op, bytes, shape);
  }

  // Models that time a collective step by step (job.collective_model: steps)
  // need each member's arrival; the engine records arrivals only when this is true.
  virtual bool wants_arrivals() const { return false; }

  // Time from the LAST member's arrival to completion, given every member's
  // arrival: `arrival_ns[i]` is when group member i (group order) arrived, on any
  // common clock. `root` is the group index of a broadcast/reduce root. Early
  // members may have done part of the work by then, so the result can be shorter
  // than collective_time_degraded(). The default ignores the arrivals.
  virtual Duration collective_time_after(OpKind op, int64_t bytes, const GroupShape& shape,
                                         const std::vector<LinkDegradation>& degraded,
                                         std::span<const int64_t> /*arrival_ns*/, int /*root*/) const {
    return degraded.empty() ? collective_time(op, bytes, shape)
                            : collective_time_degraded(op, bytes, shape, degraded);
  }

  // A short name for summaries ("alpha-beta ring").
  virtual const char* name() const = 0;
};

// Bytes one member sends in total for the op under a ring schedule
// (allreduce 2(n-1)/n*S, allgather/reducescatter/alltoall (n-1)/n*S, broadcast/
// reduce S, send S). Used for NIC counters and bus bandwidth.
double ring_bytes_sent_per_rank(OpKind op, int64_t bytes, int ranks);

// The placeholder model of the simulator core: a ring over the group's slowest
// link class (NVLink inside one node, the rank's share of its node's NICs
// across nodes), T = steps * alpha + bytes_sent / bandwidth.
std::unique_ptr<CostModel> make_alpha_beta_model(const Fleet& fleet);

}  // namespace fleetsim
