// The cost-model choice. Options were validated by the loader; a failure here
// is still reported as a diagnostic at the scenario rather than a crash.
#include "sim/model/cost_model_factory.h"

#include <filesystem>

#include "sim/model/calibration.h"
#include "sim/model/nccl_model.h"
#include "sim/model/ring_steps.h"

namespace fleetsim {

Result<std::unique_ptr<CostModel>> make_cost_model(const Plan& plan) {
  const Job& job = plan.scenario.job;
  if (!plan.scenario.calibration.empty()) {  // a fitted model from `fleetsim calibrate` wins
    std::filesystem::path path(plan.scenario.calibration);
    if (path.is_relative() && !plan.scenario.file.empty())
      path = std::filesystem::path(plan.scenario.file).parent_path() / path;
    auto c = load_calibration(path.string());
    if (!c.ok()) return c.errors();
    return make_calibrated_model(*c, plan.scenario.fleet, job.nccl_algo, job.nccl_proto);
  }
  if (job.collective_model == CollectiveModel::kAlphaBeta) return make_alpha_beta_model(plan.scenario.fleet);
  NcclOptions options;
  options.version = job.nccl_version;
  options.algo = job.nccl_algo;
  options.proto = job.nccl_proto;
  auto model = nccl::Model::create(fabric_from_fleet(plan.scenario.fleet), options);
  if (!model.ok()) {
    Diagnostic d = model.errors().front();
    d.loc.file = plan.scenario.file;
    return d;
  }
  if (job.collective_model == CollectiveModel::kSteps)  // NCCL's Ring run step by step on the links
    return nccl::make_ring_steps_model(fabric_from_fleet(plan.scenario.fleet), options);
  return make_nccl_model(fabric_from_fleet(plan.scenario.fleet), options);
}

}  // namespace fleetsim
