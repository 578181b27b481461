// The fleet key -> collective model table's queries (sim/model/fabric_keys.h).
#include "sim/model/fabric_keys.h"

namespace fleetsim {

bool model_reads_fleet_key(CollectiveModel model, std::string_view key) {
  for (const FabricKeyUse& u : kFabricKeyUses) {
    if (key != u.key) continue;
    switch (model) {
      case CollectiveModel::kNccl: return u.nccl;
      case CollectiveModel::kAlphaBeta: return u.alpha_beta;
      case CollectiveModel::kSteps: return u.steps;
    }
  }
  return true;
}

std::vector<std::string> ignored_fleet_key_warnings(const Scenario& scenario) {
  std::vector<std::string> out;
  const CollectiveModel m = scenario.job.collective_model;
  for (const std::string& key : scenario.fleet.keys_set) {
    if (model_reads_fleet_key(m, key)) continue;
    std::string readers;
    for (const FabricKeyUse& u : kFabricKeyUses) {
      if (key != u.key) continue;
      if (u.nccl) readers += "nccl, ";
      if (u.alpha_beta) readers += "alpha-beta, ";
      if (u.steps) readers += "steps, ";
    }
    if (readers.size() >= 2) readers.resize(readers.size() - 2);
    out.push_back("fleet." + key + " has no effect on job.collective_model '" + collective_model_name(m) +
                  "' (read by: " + (readers.empty() ? "none" : readers) + ")");
  }
  return out;
}

}  // namespace fleetsim
