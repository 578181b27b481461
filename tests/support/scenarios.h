// Scenario texts several tests share.
#pragma once

#include <string>

namespace fleetsim::test_support {

// One DGX H100 node (8 ranks, tp 1): each of `steps` steps computes for `time` with
// `jitter` (a YAML value: "2%" or a flow map), then all-reduces `bytes` over the world.
inline std::string one_node_jitter_yaml(const std::string& name, int steps, int seed, const std::string& time,
                                        const std::string& jitter, const std::string& bytes) {
  return "name: " + name + "\nfleet: {system: dgx-h100, nodes: 1}\nparallel: {tp: 1}\n" +
         "job: {steps: " + std::to_string(steps) + ", seed: " + std::to_string(seed) + "}\nstep:\n" +
         "  - compute: {name: c, time: " + time + ", jitter: " + jitter + "}\n" +
         "  - allreduce: {name: g, group: world, bytes: " + bytes + "}\n";
}

// One node, 3 steps, a 10-minute watchdog: at step 2 rank 0 alone spends 12 min in
// `save_checkpoint` (a CPU op) while the others wait in the barrier `after_save`.
inline std::string long_save_yaml() {
  return "name: long-save\nfleet: {system: dgx-h100, nodes: 1}\nparallel: {tp: 1}\n"
         "job: {steps: 3, seed: 1, watchdog: 10min}\nstep:\n"
         "  - compute: {name: fwd_bwd, time: 100ms}\n"
         "  - allreduce: {name: grads, group: world, bytes: 64MiB}\n"
         "  - when: \"rank == 0 && step == 2\"\n    do:\n"
         "      - cpu: {name: save_checkpoint, time: 12min}\n"
         "  - barrier: {name: after_save}\n";
}

}  // namespace fleetsim::test_support
