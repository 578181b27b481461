// Adapter from a RunRecord's scenario to diagnose's HealthyModel (see healthy_model.h):
// reloads the scenario, compiles its plan, builds its cost model, and answers each
// group collective with the model's time for the program's op of that name and group.
#include "sim/cli/healthy_model.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "fleetsim/cost_model.h"
#include "fleetsim/plan.h"
#include "sim/run/run.h"

namespace fleetsim::cli {
namespace {

std::optional<GroupKind> group_kind_of(const std::string& name) {
  for (int k = 0; k < kGroupKinds; ++k) {
    if (name == group_name(static_cast<GroupKind>(k))) return static_cast<GroupKind>(k);
  }
  return std::nullopt;
}

class ScenarioModel : public diagnose::HealthyModel {
 public:
  ScenarioModel(Plan plan, std::unique_ptr<CostModel> cost, std::string file)
      : plan_(std::move(plan)), cost_(std::move(cost)), file_(std::move(file)) {}

  // The first collective of the program with that name on that group kind, costed on
  // the shape of the instance the members form.
  std::optional<double> healthy_ms(const diagnose::GroupCollective& c) const override {
    const std::optional<GroupKind> kind = group_kind_of(c.group_kind);
    if (!kind || c.members.empty()) return std::nullopt;
    if (!plan_.group_exists(*kind) || c.members.front() < 0 || c.members.front() >= plan_.ranks) return std::nullopt;
    const int inst = plan_.group_instance(*kind, c.members.front());
    if (plan_.group_size(*kind) != static_cast<int>(c.members.size())) return std::nullopt;
    for (const PlanOp& op : plan_.ops) {
      if (op.group != *kind || !is_collective(op.kind) || plan_.sources[op.source].name != c.op_name) continue;
      return cost_->collective_time(op.kind, op.bytes, plan_.group_shape(*kind, inst)).to_millis();
    }
    return std::nullopt;
  }

  std::string describe() const override { return std::string(cost_->name()) + ", " + file_; }

 private:
  Plan plan_;
  std::unique_ptr<CostModel> cost_;
  std::string file_;
};

}  // namespace

diagnose::RecordModel scenario_healthy_model(const diagnose::Record& rec) {
  diagnose::RecordModel out;
  if (!rec.summary || rec.summary->executor != "sim" || rec.summary->file.empty()) return out;
  const std::string& file = rec.summary->file;
  Result<Plan> plan = load_plan(file);
  if (!plan) {
    out.note = "summary.json names scenario " + file + ", which does not load here: bandwidth judged "
               "against sibling groups only";
    return out;
  }
  Result<PreparedRun> prepared = prepare_run(std::move(*plan));
  if (!prepared) {
    out.note = "no cost model for " + file + ": bandwidth judged against sibling groups only";
    return out;
  }
  out.model = std::make_unique<ScenarioModel>(std::move(prepared->plan), std::move(prepared->cost), file);
  return out;
}

}  // namespace fleetsim::cli
