// Builds a drill's hidden incident: simulates the scenario into a RunRecord (what
// the evidence is served from), records the per-rank state live tools would see
// (a second, identical run with a state observer), and diagnoses the record so the
// score can show the isolation order's path.
#include "sim/drill/drill_incident.h"

#include <algorithm>
#include <filesystem>

#include "fleetsim/cost_model.h"
#include "sim/run/run.h"

namespace fleetsim::drill {
namespace {

namespace fs = std::filesystem;

class StateObserver : public Observer {
 public:
  explicit StateObserver(std::vector<RankView>* ranks) : ranks_(*ranks) {}

  void on_gpu_state(int rank, SimTime, GpuState s, int64_t) override { at(rank).gpu = s; }
  void on_work_enqueued(const WorkRecord& w) override {
    RankView& r = at(w.rank);
    const auto g = static_cast<size_t>(w.group);
    ++r.launched[g];
    r.recent[g].push_back(w);
    if (r.recent[g].size() > 2) r.recent[g].erase(r.recent[g].begin());
    r.pending.push_back(w);
  }
  void on_work_completed(const WorkRecord& w) override {
    std::vector<WorkRecord>& p = at(w.rank).pending;
    p.erase(std::remove_if(p.begin(), p.end(), [&](const WorkRecord& x) { return x.record_id == w.record_id; }),
            p.end());
  }
  void on_step_end(int rank, int64_t step, SimTime) override { at(rank).steps_done = step; }
  void on_fault(int rank, SimTime, const Fault& f) override {
    RankView& r = at(rank);
    if (f.kind == FaultKind::kCrash) r.crashed = true;
    if (f.kind != FaultKind::kStall) return;
    r.stalled = true;
    r.stall_where = f.where;
    r.stall_step = f.at_step;
    // The fault names the op by its YAML name; the program may hold it once.
    r.stall_op = -1;
    stall_names_.emplace_back(rank, f.op);
  }
  std::vector<std::pair<int, std::string>> stall_names_;

 private:
  RankView& at(int rank) { return ranks_[static_cast<size_t>(rank)]; }
  std::vector<RankView>& ranks_;
};

int op_by_name(const Plan& plan, const std::string& name) {
  for (size_t i = 0; i < plan.ops.size(); ++i) {
    if (plan.sources[plan.ops[i].source].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string job_name_for(const std::string& file, int ranks) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the file name: stable, reveals nothing
  for (char c : fs::path(file).stem().string()) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char buf[64];
  std::snprintf(buf, sizeof buf, "pretrain-%dg-%04x", ranks, static_cast<unsigned>(h & 0xffff));
  return buf;
}

double last_step_end(const diagnose::Record& rec) { return rec.steps.empty() ? 0.0 : rec.steps.back().end_s; }

// When the page fires and when the job stopped progressing (or began to slow).
void place_page(Incident& inc) {
  const RunResult& r = inc.result;
  switch (r.outcome) {
    case Outcome::kHang:
      inc.fault_s = last_step_end(inc.record);
      inc.page_s = r.hang.detected_at.to_seconds();
      break;
    case Outcome::kDeadlock:
      inc.fault_s = last_step_end(inc.record);
      inc.page_s = inc.fault_s + 15 * 60;
      break;
    case Outcome::kCrash:
      inc.fault_s = r.crash.at.to_seconds();
      inc.page_s = r.crash.detected_at.to_seconds();
      break;
    case Outcome::kCompleted: {
      const auto& steps = inc.record.steps;
      const double base = steps.empty() ? 0 : steps.front().duration_s;
      inc.fault_s = 0;
      for (const auto& s : steps) {
        if (s.duration_s > 1.15 * base) {
          inc.fault_s = s.start_s;
          break;
        }
      }
      inc.page_s = r.end.to_seconds();
      break;
    }
  }
}

}  // namespace

Result<Incident> build_incident(const std::string& file, const std::string& work_dir) {
  Result<PreparedRun> prepared = prepare_run(file);
  if (!prepared) return prepared.errors();
  RunOptions opts;
  opts.out_dir = work_dir;
  opts.force = true;  // the drill's own folder: an earlier run there is replaced
  Result<RecordedRun> run = execute(*prepared, opts);
  if (!run) return run.errors();
  Plan* plan = &prepared->plan;
  const CostModel* cost = prepared->cost.get();
  Incident inc;
  inc.file = file;
  inc.job_name = job_name_for(file, plan->ranks);
  inc.result = run->result;
  inc.ranks.resize(static_cast<size_t>(plan->ranks));
  for (int r : plan->absent_ranks) inc.ranks[static_cast<size_t>(r)].absent = true;
  StateObserver state(&inc.ranks);
  run_simulation(*plan, *cost, {&state});
  inc.plan = std::move(*plan);
  inc.cost = std::move(prepared->cost);
  inc.baseline_step_ns = run->tax.baseline_step_ns;
  for (const auto& [rank, name] : state.stall_names_) {
    inc.ranks[static_cast<size_t>(rank)].stall_op = name.empty() ? -1 : op_by_name(inc.plan, name);
  }
  Result<diagnose::Record> rec = diagnose::read_record(work_dir);
  if (!rec) return rec.errors();
  inc.record = std::move(*rec);
  const std::unique_ptr<diagnose::HealthyModel> model = diagnose::recorded_model(inc.record);
  inc.diagnosis = diagnose::diagnose_record(inc.record, model.get());
  place_page(inc);
  return inc;
}

int rerun_minutes(const Incident& inc) {
  const double reach_s = inc.result.outcome == Outcome::kCompleted ? 10 * 60 : inc.fault_s;
  return 10 + static_cast<int>((reach_s + 59) / 60);
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace fleetsim::drill
