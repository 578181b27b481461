// Sweep execution and formatting. A task loads its point's scenario (the file
// plus --set and the point's overrides), offsets the seed, runs it with
// execute_plan (lockstep when eligible) and a StepTable that keeps only
// durations, and measures the tax against baseline_step(). Aggregation and
// printing happen after every task is done, in task order.
#include "sim/sweep/sweep.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include "fleetsim/cost_model.h"
#include "sim/io/scenario_loader.h"
#include "sim/model/cost_model_factory.h"
#include "sim/exec/executor.h"
#include "sim/observe/step_table.h"
#include "sim/sweep/order_stats.h"

namespace fleetsim {

namespace {

std::vector<std::string> point_overrides(const SweepSpec& spec, const SweepPoint& p) {
  std::vector<std::string> o = spec.sets;
  o.insert(o.end(), p.overrides.begin(), p.overrides.end());
  return o;
}

// The closed-form tax of the plan's jittered compute (see order_stats.h):
// one jittered compute op, or several normal ones combined; NaN when faults
// are present or the jitter laws cannot be combined.
void closed_form(const Plan& plan, double baseline_ns, TaskResult* r) {
  r->exact_tax = r->gumbel_tax = std::nan("");
  if (!plan.stragglers.empty() || baseline_ns <= 0) return;
  ComputeTime ct(plan);
  Jitter j;
  double t = 0, var = 0;
  int count = 0;
  bool all_normal = true;
  for (uint32_t o = 0; o < plan.ops.size(); ++o) {
    if (plan.ops[o].kind != OpKind::kCompute || !ct.jitter(o).active()) continue;
    const double ti = static_cast<double>(plan.ops[o].time.ns);
    j = ct.jitter(o);
    all_normal = all_normal && j.dist == JitterDist::kNormal;
    t += ti;
    var += (ti * j.cv) * (ti * j.cv);
    ++count;
  }
  if (count == 0) { r->exact_tax = r->gumbel_tax = 0; return; }
  if (count > 1) {
    if (!all_normal) return;
    j = Jitter{};
    j.cv = std::sqrt(var) / t;
  }
  const double share = t / baseline_ns;
  r->exact_tax = (expected_max(j, plan.ranks) - 1) * share;
  r->gumbel_tax = (gumbel_max(j, plan.ranks) - 1) * share;
}

}  // namespace

Result<SweepGrid> make_grid(const SweepSpec& spec) {
  SweepGrid g;
  g.spec = spec;
  g.points.push_back({});
  for (const SweepAxis& a : spec.axes) {
    std::vector<SweepPoint> next;
    for (const SweepPoint& p : g.points)
      for (const std::string& v : a.values) {
        SweepPoint q = p;
        q.values.push_back(v);
        q.overrides.push_back(a.key + "=" + v);
        next.push_back(std::move(q));
      }
    g.points = std::move(next);
  }
  std::vector<Diagnostic> errors;
  for (const SweepPoint& p : g.points) {
    auto s = load_scenario(spec.scenario, point_overrides(spec, p));
    if (!s.ok()) errors.insert(errors.end(), s.errors().begin(), s.errors().end());
    if (errors.size() >= 20) break;
  }
  if (!errors.empty()) return errors;
  return g;
}

Result<TaskResult> run_task(const SweepGrid& grid, size_t i) {
  const auto seeds = static_cast<size_t>(grid.spec.seeds);
  auto s = load_scenario(grid.spec.scenario, point_overrides(grid.spec, grid.points[i / seeds]));
  if (!s.ok()) return s.errors();
  s->job.seed += i % seeds;
  auto plan = compile_plan(*s);
  if (!plan.ok()) return plan.errors();
  auto cost_or = make_cost_model(*plan);  // the model `fleetsim run` uses
  if (!cost_or.ok()) return cost_or.errors();
  const CostModel& cost = **cost_or;
  std::unique_ptr<StepTable> table;
  const Executed ex = execute_plan(*plan, cost, true, [&](ExecutorKind, StepAccounting**) {
    table = std::make_unique<StepTable>(*plan, nullptr);
    return std::vector<Observer*>{table.get()};
  });
  if (!ex.result.errors.empty()) return ex.result.errors;
  TaskResult r;
  r.baseline_step_ns = baseline_step(*plan, cost).mean_step_ns;
  r.lockstep = ex.executor == ExecutorKind::kLockstep ? 1 : 0;
  r.ranks = plan->ranks;
  long double sum = 0, t = 0, tt = 0;
  for (int64_t d : table->durations_ns()) {
    sum += static_cast<long double>(d);
    const long double x = static_cast<long double>(d) / r.baseline_step_ns - 1;
    t += x;
    tt += x * x;
  }
  r.steps = static_cast<double>(table->durations_ns().size());
  if (r.steps > 0) r.mean_step_ns = static_cast<double>(sum / static_cast<long double>(r.steps));
  r.tax = r.baseline_step_ns > 0 && r.steps > 0 ? r.mean_step_ns / r.baseline_step_ns - 1 : 0;
  r.step_tax_sum = static_cast<double>(t);
  r.step_tax_sumsq = static_cast<double>(tt);
  closed_form(*plan, r.baseline_step_ns, &r);
  return r;
}

Result<std::vector<TaskResult>> run_tasks(const SweepGrid& grid, int threads, const std::function<bool(size_t)>& mine,
                                          std::atomic<size_t>* done) {
  std::vector<size_t> todo;
  for (size_t i = 0; i < grid.tasks(); ++i)
    if (mine(i)) todo.push_back(i);
  std::vector<TaskResult> out(grid.tasks());
  std::vector<std::vector<Diagnostic>> errors(grid.tasks());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k = next++; k < todo.size(); k = next++) {
      auto r = run_task(grid, todo[k]);
      if (r.ok()) out[todo[k]] = *r;
      else errors[todo[k]] = r.errors();
      if (done) ++*done;
    }
  };
  const size_t n = std::max<size_t>(1, std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), todo.size()));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  for (const auto& e : errors)
    if (!e.empty()) return e;
  return out;
}

double t975(int64_t df) {
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                  2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                  2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::nan("");
  return df <= 30 ? kT[df - 1] : 1.96;
}

namespace {

struct Row {
  double ranks = 0, step_s = 0, tax = 0, lo = 0, hi = 0, exact = 0, gumbel = 0;
  std::string executor;
};

Row aggregate(const TaskResult* t, int seeds) {
  Row row;
  double lockstep = 0, tax_sq = 0;
  for (int k = 0; k < seeds; ++k) {
    row.step_s += t[k].mean_step_ns * 1e-9 / seeds;
    row.tax += t[k].tax / seeds;
    lockstep += t[k].lockstep;
  }
  for (int k = 0; k < seeds; ++k) tax_sq += (t[k].tax - row.tax) * (t[k].tax - row.tax);
  double half = 0;
  if (seeds > 1) {
    half = t975(seeds - 1) * std::sqrt(tax_sq / (seeds - 1) / seeds);
  } else if (t[0].steps > 1) {  // one seed: the steps' spread
    const double n = t[0].steps, m = t[0].step_tax_sum / n;
    half = 1.96 * std::sqrt(std::max(0.0, (t[0].step_tax_sumsq - n * m * m) / (n - 1)) / n);
  }
  row.lo = row.tax - half;
  row.hi = row.tax + half;
  row.ranks = t[0].ranks;
  row.exact = t[0].exact_tax;
  row.gumbel = t[0].gumbel_tax;
  row.executor = lockstep == seeds ? "lockstep" : lockstep == 0 ? "event" : "mixed";
  return row;
}

std::string pct(double x) {
  if (std::isnan(x)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f%%", x * 100);
  return b;
}

std::string num(double x) {
  if (std::isnan(x)) return "";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", x);
  return b;
}

}  // namespace

std::string format_sweep(const SweepGrid& grid, const std::vector<TaskResult>& tasks, bool csv) {
  const int seeds = grid.spec.seeds;
  std::vector<std::string> head;
  for (const SweepAxis& a : grid.spec.axes) head.push_back(a.key);
  const std::vector<std::string> cols =
      csv ? std::vector<std::string>{"ranks", "seeds", "executor", "mean_step_s", "tax", "tax_ci95_lo", "tax_ci95_hi",
                                     "exact_tax", "gumbel_tax"}
          : std::vector<std::string>{"ranks", "seeds", "executor", "step_s", "tax", "tax 95% CI", "exact", "gumbel"};
  head.insert(head.end(), cols.begin(), cols.end());
  std::vector<std::vector<std::string>> rows;
  for (size_t p = 0; p < grid.points.size(); ++p) {
    const Row r = aggregate(&tasks[p * static_cast<size_t>(seeds)], seeds);
    std::vector<std::string> cells = grid.points[p].values;
    char step[32];
    std::snprintf(step, sizeof step, "%.6f", r.step_s);
    if (csv) {
      for (const std::string& c : {num(r.ranks), std::to_string(seeds), r.executor, num(r.step_s), num(r.tax), num(r.lo),
                                   num(r.hi), num(r.exact), num(r.gumbel)})
        cells.push_back(c);
    } else {
      for (const std::string& c : {num(r.ranks), std::to_string(seeds), r.executor, std::string(step), pct(r.tax),
                                   "[" + pct(r.lo) + ", " + pct(r.hi) + "]", pct(r.exact), pct(r.gumbel)})
        cells.push_back(c);
    }
    rows.push_back(std::move(cells));
  }
  std::string out;
  if (csv) {
    rows.insert(rows.begin(), head);
    for (const auto& row : rows) {
      for (size_t c = 0; c < row.size(); ++c) out += (c ? "," : "") + row[c];
      out += "\n";
    }
    return out;
  }
  std::vector<size_t> width(head.size());
  for (size_t c = 0; c < head.size(); ++c) width[c] = head[c].size();
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  rows.insert(rows.begin(), head);
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += (c ? "  " : "") + (c < grid.spec.axes.size() ? row[c] + pad : pad + row[c]);
    }
    out += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
  }
  return out;
}

}  // namespace fleetsim
