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

}  // namespace fleetsim::test_support
