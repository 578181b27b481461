// summary.json's shared parts (see summary.h).
#include "sim/observe/summary.h"

#include <algorithm>

namespace fleetsim {

void add_scenario_fields(nlohmann::ordered_json* out, const Plan& plan) {
  nlohmann::ordered_json& j = *out;
  j["scenario"] = plan.scenario.name;
  j["description"] = plan.scenario.description;
  j["file"] = plan.scenario.file;
  j["seed"] = plan.scenario.job.seed;
  j["ranks"] = plan.ranks;
  j["parallel"] = {{"tp", plan.tp}, {"dp", plan.dp}, {"pp", plan.pp}};
}

namespace {
constexpr size_t kTimedOutListed = 1024;
}  // namespace

void add_outcome_fields(nlohmann::ordered_json* out, const Plan& plan, const RunResult& r,
                        const std::string& deadlock_why) {
  nlohmann::ordered_json& j = *out;
  if (r.outcome == Outcome::kHang) {
    const PlanOp& op = plan.ops[r.hang.op];
    const int hang_rank = std::max(r.hang.first_timeout_rank, 0);  // its group instance names the group
    j["hang"] = {{"step", r.hang.step},
                 {"stuck_since_s", r.hang.stuck_since.to_seconds()},
                 {"detected_at_s", r.hang.detected_at.to_seconds()},
                 {"first_timeout_rank", r.hang.first_timeout_rank},
                 {"timeout_s", plan.scenario.job.watchdog->to_seconds()},
                 {"process_group", plan.group_global_name(r.hang.group, plan.group_instance(r.hang.group, hang_rank))},
                 {"group", group_name(r.hang.group)},
                 {"collective_seq_id", r.hang.collective_seq_id},
                 {"op", op_watchdog_name(op.kind)},
                 {"op_name", plan.sources[op.source].name}};
    // Every rank that timed out, in firing order, up to kTimedOutListed; beyond, the
    // first kTimedOutListed and the count, so the summary stays bounded at any scale.
    const std::vector<int>& t = r.hang.timed_out_ranks;
    if (t.size() <= kTimedOutListed) {
      j["hang"]["timed_out_ranks"] = t;
    } else {
      j["hang"]["timed_out_ranks_first"] = std::vector<int>(t.begin(), t.begin() + kTimedOutListed);
      j["hang"]["timed_out_count"] = t.size();
    }
  }
  if (r.outcome == Outcome::kCrash)
    j["crash"] = {{"rank", r.crash.rank}, {"step", r.crash.step}, {"at_s", r.crash.at.to_seconds()},
                  {"detected_at_s", r.crash.detected_at.to_seconds()}};
  if (r.outcome == Outcome::kDeadlock)
    j["deadlock"] = {{"step", r.stuck_step}, {"at_s", r.end.to_seconds()},
                     {"why", deadlock_why}};
}

namespace {

constexpr int kPerRankMax = 1024, kTopK = 16, kHistogramBins = 20;

// Min, p50, max and mean of per-rank values (ns), in seconds.
nlohmann::ordered_json spread_s(const std::vector<int64_t>& v) {
  std::vector<int64_t> s = v;
  std::sort(s.begin(), s.end());
  long double sum = 0;
  for (int64_t x : s) sum += static_cast<long double>(x);
  if (s.empty()) return nlohmann::ordered_json::object();
  return {{"min", static_cast<double>(s.front()) * 1e-9}, {"p50", static_cast<double>(s[(s.size() - 1) / 2]) * 1e-9},
          {"max", static_cast<double>(s.back()) * 1e-9},
          {"mean", static_cast<double>(sum / static_cast<long double>(s.size())) * 1e-9}};
}

// The k ranks with the largest (or, `least`, smallest) value; ties to the lowest rank.
std::vector<int> top_ranks(const std::vector<int64_t>& v, bool least) {
  std::vector<int> idx(v.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int>(i);
  const size_t k = std::min<size_t>(kTopK, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](int a, int b) {
    const int64_t x = v[static_cast<size_t>(a)], y = v[static_cast<size_t>(b)];
    return x != y ? (least ? x < y : x > y) : a < b;
  });
  idx.resize(k);
  return idx;
}

}  // namespace

nlohmann::ordered_json straggler_json(const TaxReport& t, int ranks) {
  using Json = nlohmann::ordered_json;
  Json j;
  j["baseline_step_s"] = t.baseline_step_ns * 1e-9;
  j["baseline"] = std::string(t.baseline_how) + " (the same plan with jitter and faults off)";
  j["mean_step_s"] = t.mean_step_ns * 1e-9;
  j["slowest_rank_is"] = "the rank that waited least in the step's collectives (ties: lowest rank)";
  if (t.wait_ns.empty()) return j;
  auto seconds = [](const std::vector<int64_t>& v) {
    Json a = Json::array();
    for (int64_t x : v) a.push_back(static_cast<double>(x) * 1e-9);
    return a;
  };
  if (ranks <= kPerRankMax) {
    j["slowest_counts"] = t.slowest_counts;
    j["collective_wait_s"] = seconds(t.wait_ns);
    j["compute_s"] = seconds(t.compute_ns);
    return j;
  }
  Json top = Json::array(), least = Json::array();
  for (int r : top_ranks(t.slowest_counts, false))
    if (t.slowest_counts[static_cast<size_t>(r)] > 0) top.push_back({{"rank", r}, {"steps", t.slowest_counts[static_cast<size_t>(r)]}});
  for (int r : top_ranks(t.wait_ns, true))
    least.push_back({{"rank", r}, {"wait_s", static_cast<double>(t.wait_ns[static_cast<size_t>(r)]) * 1e-9}});
  j["slowest_top"] = top;
  j["collective_wait_s"] = spread_s(t.wait_ns);
  j["least_waiting"] = least;
  const auto [lo, hi] = std::minmax_element(t.wait_ns.begin(), t.wait_ns.end());
  std::vector<int64_t> counts(kHistogramBins, 0);
  const double width = static_cast<double>(*hi - *lo) / kHistogramBins;
  for (int64_t w : t.wait_ns) {
    const auto b = width > 0 ? static_cast<size_t>(static_cast<double>(w - *lo) / width) : 0;
    ++counts[std::min<size_t>(b, kHistogramBins - 1)];
  }
  j["collective_wait_histogram"] = {{"from_s", static_cast<double>(*lo) * 1e-9}, {"to_s", static_cast<double>(*hi) * 1e-9},
                                    {"counts", counts}};
  j["compute_s"] = spread_s(t.compute_ns);
  return j;
}

void add_outputs_field(nlohmann::ordered_json* j, OutputSet written, const OutputNotes& notes) {
  using Json = nlohmann::ordered_json;
  Json files = Json::array(), skipped = Json::array();
  for (const OutputSpec& o : kOutputs)
    if (written.has(o.id)) files.push_back(o.file_name);
  for (const auto& [file, why] : notes) skipped.push_back({{"file", file}, {"why", why}});
  (*j)["outputs"] = {{"written", files}, {"notes", skipped}};
}

}  // namespace fleetsim
