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
  kNvlink,     // GPU `gpu` of `node` has `fraction` of its NVLink bandwidth (a degraded NVLink or NVSwitch port)
};

// Compute-time faults share FaultKind::kStraggler (they only stretch compute
// kernels, never block anything) and differ by mode; each has its own YAML key.
enum class SlowMode : uint8_t {
  kPersistent,    // `straggler`: compute x slowdown in [from_step, to_step]
  kIntermittent,  // `intermittent`: each step, with `probability`, compute x slowdown * X
  kPause,         // `pause`: every `every` steps, `pause` extra time on the step's first compute
  kThrottle,      // `throttle`: compute x the factor of the schedule entry in force
};

// What part of the job a fault acts on; the executors, the plan and the drill
// branch on the family, so that a new kind of an existing family needs no new
// branch anywhere.
enum class FaultFamily : uint8_t {
  kCompute,   // stretches compute kernels (never blocks anything)
  kProcess,   // a rank's process or CPU: stall, crash, absent
  kProgram,   // what a rank issues: skip, mismatch
  kFabric,    // a slower link: collective times stretch (sim/program/fault_effects.cc maps it)
  kNicDown,   // a dead NIC: collectives across it stop, then NCCL errors
};

inline constexpr int kFaultKeysMax = 8;

// One YAML spelling of a fault: `- straggler: {ranks: [3], slowdown: 1.3}`.
struct FaultSpec {
  const char* name;                            // the fault's YAML key
  FaultKind kind;
  SlowMode mode;                               // kStraggler's variants; kPersistent otherwise
  FaultFamily family;
  bool across_nodes;                           // shows only in traffic between nodes (a NIC's)
  const char* keys[kFaultKeysMax];             // the keys its mapping accepts; unused slots null
  const char* what;                            // one line for help and docs
};

// Every fault a scenario can name, in the order the docs list them.
inline constexpr FaultSpec kFaultSpecs[] = {
    {"straggler", FaultKind::kStraggler, SlowMode::kPersistent, FaultFamily::kCompute, false, {"ranks", "rank", "slowdown", "from_step", "to_step"},
     "the ranks' compute runs `slowdown` times longer in [from_step, to_step]"},
    {"intermittent", FaultKind::kStraggler, SlowMode::kIntermittent, FaultFamily::kCompute, false,
     {"ranks", "rank", "probability", "slowdown", "from_step", "to_step"},
     "each rank and step, with `probability`, compute runs `slowdown` times longer"},
    {"pause", FaultKind::kStraggler, SlowMode::kPause, FaultFamily::kCompute, false,
     {"ranks", "rank", "every", "time", "what", "phase", "from_step", "to_step"},
     "every `every` steps a host pause (GC, I/O) adds `time` to the step's first compute"},
    {"throttle", FaultKind::kStraggler, SlowMode::kThrottle, FaultFamily::kCompute, false, {"ranks", "rank", "schedule"},
     "thermal throttling: compute x the factor of the schedule stage in force"},
    {"stall", FaultKind::kStall, SlowMode::kPersistent, FaultFamily::kProcess, false, {"rank", "at_step", "where", "op"},
     "the rank's CPU enters `where` (or the cpu op `op`) at at_step and never returns"},
    {"crash", FaultKind::kCrash, SlowMode::kPersistent, FaultFamily::kProcess, false, {"rank", "at_step"},
     "the rank's process dies at the start of at_step"},
    {"skip", FaultKind::kSkip, SlowMode::kPersistent, FaultFamily::kProgram, false, {"rank", "op", "at_step"},
     "the rank does not issue `op` at at_step"},
    {"mismatch", FaultKind::kMismatch, SlowMode::kPersistent, FaultFamily::kProgram, false, {"rank", "op", "at_step", "bytes", "dtype"},
     "the rank issues `op` at at_step with other bytes and/or dtype"},
    {"absent", FaultKind::kAbsent, SlowMode::kPersistent, FaultFamily::kProcess, false, {"ranks", "rank"},
     "the ranks never start (a job launched without its full gang)"},
    {"link", FaultKind::kLink, SlowMode::kPersistent, FaultFamily::kFabric, true, {"node", "nic", "bandwidth"},
     "NIC `nic` of `node` runs at `bandwidth` of its rate"},
    {"gpudirect", FaultKind::kGpuDirect, SlowMode::kPersistent, FaultFamily::kFabric, true, {"nodes", "enabled"},
     "GPUDirect RDMA off on `nodes`: NIC traffic staged through host memory"},
    {"nic_affinity", FaultKind::kNicAffinity, SlowMode::kPersistent, FaultFamily::kFabric, true, {"node", "gpu", "numa"},
     "GPU `gpu` of `node` uses a NIC on the other CPU socket (host-staged)"},
    {"nic_down", FaultKind::kNicDown, SlowMode::kPersistent, FaultFamily::kNicDown, true, {"node", "nic", "at_step"},
     "NIC `nic` of `node` dies at at_step: no failover, NCCL errors after the IB retry timeout"},
    {"nvlink", FaultKind::kNvlink, SlowMode::kPersistent, FaultFamily::kFabric, false, {"node", "gpu", "bandwidth"},
     "GPU `gpu` of `node` keeps `bandwidth` of its NVLink bandwidth (a degraded NVLink or NVSwitch port)"},
};

// The YAML key of a kind (for kStraggler: "straggler").
constexpr const char* fault_yaml_name(FaultKind k) {
  for (const FaultSpec& f : kFaultSpecs)
    if (f.kind == k) return f.name;
  return "?";
}

// The family of a kind, and whether it shows only between nodes.
constexpr FaultFamily fault_family(FaultKind k) {
  for (const FaultSpec& f : kFaultSpecs)
    if (f.kind == k) return f.family;
  return FaultFamily::kProcess;
}
constexpr bool fault_across_nodes(FaultKind k) {
  for (const FaultSpec& f : kFaultSpecs)
    if (f.kind == k) return f.across_nodes;
  return false;
}

// The spelling `name`, or nullptr.
constexpr const FaultSpec* fault_spec(std::string_view name) {
  for (const FaultSpec& f : kFaultSpecs)
    if (name == f.name) return &f;
  return nullptr;
}

}  // namespace fleetsim
