// Which collective model reads which `fleet` key: one table, read by `check`
// (a key set in the scenario that the chosen model ignores is a warning) and
// checked against docs/collectives.md ("Fabric keys and models").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/scenario.h"

namespace fleetsim {

struct FabricKeyUse {
  const char* key;  // under fleet:
  bool nccl;
  bool alpha_beta;
  bool steps;
  const char* how;  // one line: what the key changes
};

inline constexpr FabricKeyUse kFabricKeyUses[] = {
    {"system", true, true, true, "preset: the other keys' defaults; nccl and steps also take its GPU generation and CPU vendor"},
    {"nodes", true, true, true, "group shapes"},
    {"gpus_per_node", true, true, true, "group shapes; NICs per GPU"},
    {"nvlink_bandwidth", true, true, true, "NVLink rate (NCCL graphs; alpha-beta's intra-node rate)"},
    {"nvlink_latency", true, true, true,
     "per NVLink hop: NCCL's hwLat plus the difference from 600 ns (steps: averaged over the ring); alpha-beta's alpha"},
    {"nics_per_node", true, true, true, "NICs (NCCL graphs and channels; alpha-beta's per-GPU share)"},
    {"nic_bandwidth", true, true, true, "NIC rate"},
    {"net_latency", true, true, true,
     "per network hop: NCCL's hwLat plus the difference from 5 us (steps: averaged over the ring); alpha-beta's alpha"},
    {"oversubscription", true, false, true, "leaf:spine: alltoall across leaves (nccl, steps' non-ring ops)"},
    {"gpudirect", true, false, true, "off: NIC traffic staged through host memory, no LL128 across nodes"},
    {"cpu", true, false, true, "NCCL's per-vendor net overhead and multi-node LL cap"},
};

// Whether `model` reads fleet key `key` (unknown keys: true, nothing to say).
bool model_reads_fleet_key(CollectiveModel model, std::string_view key);

// The keys the scenario set under fleet: that its job.collective_model
// ignores, as one warning line each ("fleet.KEY has no effect on ...").
std::vector<std::string> ignored_fleet_key_warnings(const Scenario& scenario);

}  // namespace fleetsim
