// The fault kinds a scenario can inject, once: the enum the simulator and the
// real runners switch on, and the table of YAML keys that the loader, the CLI
// (`fleetsim list faults`) and the docs test read. What a fault carries is
// `Fault` (scenario.h); what it does is said where its effect is applied.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fleetsim {

enum class FaultKind : uint8_t {
  kStraggler,  // ranks' compute runs `slowdown` times longer in [from_step, to_step]
  kStall,      // rank's CPU enters `where` at the start of at_step (or the cpu op `op`) and never returns
  kCrash,      // rank's process dies at the start of at_step
  kSkip,       // rank does not issue op `op` at at_step
  kMismatch,   // rank issues op `op` at at_step with other bytes and/or dtype
  kAbsent,     // ranks never start (a job launched without its full gang)
  kLink,       // NIC `nic` of `node` runs at `fraction` of its rate (a degraded cable or port)
  kGpuDirect,  // GPUDirect RDMA off on `nodes`: NIC traffic is staged through host memory
  kNicAffinity,// GPU `gpu` of `node` uses a NIC on the remote NUMA node (no GPUDirect, host-staged)
  kNicDown,    // NIC `nic` of `node` goes down at at_step: no failover; NCCL errors after the IB retry timeout
};

// Compute-time faults share FaultKind::kStraggler (they only stretch compute
// kernels, never block anything) and differ by mode; each has its own YAML key.
enum class SlowMode : uint8_t {
  kPersistent,    // `straggler`: compute x slowdown in [from_step, to_step]
  kIntermittent,  // `intermittent`: each step, with `probability`, compute x slowdown * X
  kPause,         // `pause`: every `every` steps, `pause` extra time on the step's first compute
  kThrottle,      // `throttle`: compute x the factor of the schedule entry in force
};

inline constexpr int kFaultKeysMax = 8;

// One YAML spelling of a fault: `- straggler: {ranks: [3], slowdown: 1.3}`.
struct FaultSpec {
  const char* name;                            // the fault's YAML key
  FaultKind kind;
  SlowMode mode;                               // kStraggler's variants; kPersistent otherwise
  const char* keys[kFaultKeysMax];             // the keys its mapping accepts; unused slots null
  const char* what;                            // one line for help and docs
};

// Every fault a scenario can name, in the order the docs list them.
inline constexpr FaultSpec kFaultSpecs[] = {
    {"straggler", FaultKind::kStraggler, SlowMode::kPersistent, {"ranks", "rank", "slowdown", "from_step", "to_step"},
     "the ranks' compute runs `slowdown` times longer in [from_step, to_step]"},
    {"intermittent", FaultKind::kStraggler, SlowMode::kIntermittent,
     {"ranks", "rank", "probability", "slowdown", "from_step", "to_step"},
     "each rank and step, with `probability`, compute runs `slowdown` times longer"},
    {"pause", FaultKind::kStraggler, SlowMode::kPause,
     {"ranks", "rank", "every", "time", "what", "phase", "from_step", "to_step"},
     "every `every` steps a host pause (GC, I/O) adds `time` to the step's first compute"},
    {"throttle", FaultKind::kStraggler, SlowMode::kThrottle, {"ranks", "rank", "schedule"},
     "thermal throttling: compute x the factor of the schedule stage in force"},
    {"stall", FaultKind::kStall, SlowMode::kPersistent, {"rank", "at_step", "where", "op"},
     "the rank's CPU enters `where` (or the cpu op `op`) at at_step and never returns"},
    {"crash", FaultKind::kCrash, SlowMode::kPersistent, {"rank", "at_step"},
     "the rank's process dies at the start of at_step"},
    {"skip", FaultKind::kSkip, SlowMode::kPersistent, {"rank", "op", "at_step"},
     "the rank does not issue `op` at at_step"},
    {"mismatch", FaultKind::kMismatch, SlowMode::kPersistent, {"rank", "op", "at_step", "bytes", "dtype"},
     "the rank issues `op` at at_step with other bytes and/or dtype"},
    {"absent", FaultKind::kAbsent, SlowMode::kPersistent, {"ranks", "rank"},
     "the ranks never start (a job launched without its full gang)"},
    {"link", FaultKind::kLink, SlowMode::kPersistent, {"node", "nic", "bandwidth"},
     "NIC `nic` of `node` runs at `bandwidth` of its rate"},
    {"gpudirect", FaultKind::kGpuDirect, SlowMode::kPersistent, {"nodes", "enabled"},
     "GPUDirect RDMA off on `nodes`: NIC traffic staged through host memory"},
    {"nic_affinity", FaultKind::kNicAffinity, SlowMode::kPersistent, {"node", "gpu", "numa"},
     "GPU `gpu` of `node` uses a NIC on the other CPU socket (host-staged)"},
    {"nic_down", FaultKind::kNicDown, SlowMode::kPersistent, {"node", "nic", "at_step"},
     "NIC `nic` of `node` dies at at_step: no failover, NCCL errors after the IB retry timeout"},
};

// The YAML key of a kind (for kStraggler: "straggler").
constexpr const char* fault_yaml_name(FaultKind k) {
  for (const FaultSpec& f : kFaultSpecs)
    if (f.kind == k) return f.name;
  return "?";
}

// The spelling `name`, or nullptr.
constexpr const FaultSpec* fault_spec(std::string_view name) {
  for (const FaultSpec& f : kFaultSpecs)
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace fleetsim
