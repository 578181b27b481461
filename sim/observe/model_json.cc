// model.json's writer (see model_json.h): one entry per collective op of the
// program (the first with each name on each group kind, as the flight
// recorder's frames name them), with its healthy time on each distinct shape
// of that group kind's instances.
#include "sim/observe/model_json.h"

#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

namespace fleetsim {

void write_model_json(const Plan& plan, const CostModel& cost, std::FILE* out) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["cost_model"] = cost.name();
  j["scenario_file"] = plan.scenario.file;
  j["gpus_per_node"] = plan.scenario.fleet.gpus_per_node;
  Json collectives = Json::array();
  std::set<std::pair<std::string, int>> seen;  // (op name, group kind)
  for (const PlanOp& op : plan.ops) {
    if (!is_collective(op.kind)) continue;
    const std::string& name = plan.sources[op.source].name;
    if (!seen.insert({name, static_cast<int>(op.group)}).second) continue;
    std::set<std::tuple<int, int, int>> shapes;
    Json healthy = Json::array();
    for (int inst = 0; inst < plan.group_count(op.group); ++inst) {
      const GroupShape s = plan.group_shape(op.group, inst);
      if (!shapes.insert({s.ranks, s.nodes, s.ranks_per_node}).second) continue;
      healthy.push_back({{"ranks", s.ranks}, {"nodes", s.nodes}, {"ranks_per_node", s.ranks_per_node},
                         {"time_ns", cost.collective_time(op.kind, op.bytes, s).ns}});
    }
    collectives.push_back({{"op_name", name}, {"op", op_profiling_name(op.kind)}, {"group", group_name(op.group)},
                           {"bytes", op.bytes}, {"healthy", healthy}});
  }
  j["collectives"] = collectives;
  const std::string text = j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), out);
}

}  // namespace fleetsim
