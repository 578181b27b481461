// Slow links judged against a healthy model: for a record whose caller knows the
// run's cost model (a simulator RunRecord), compare each group instance's achieved
// collective time with the model's healthy time for its shape and bytes.
// The achieved time per seq is the shortest member's FR duration: FR measures from
// each member's own start, so the last to arrive waits least and its duration is
// the collective itself, without waiting for late peers (a straggler's signature).
#include <algorithm>
#include <map>
#include <memory>
#include <array>
#include <cstdio>

#include "sim/diagnose/diagnose.h"
#include "sim/diagnose/fr_analyzer.h"

namespace fleetsim::diagnose {
namespace {

constexpr double kSlowRatio = 1.25;  // below 0.8 of the expected bandwidth

// The group kinds a model is asked about, in the order their verdicts are weighed.
constexpr std::array<const char*, 4> kKinds = {"world", "tp", "dp", "pp"};

// The index into kKinds of a process group's description, or nullopt.
std::optional<int> kind_of(const std::string& desc) {
  if (desc == "default_pg") return 0;
  for (size_t k = 0; k < kKinds.size(); ++k) {
    if (desc == kKinds[k]) return static_cast<int>(k);
  }
  return std::nullopt;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// One timed group instance and op: the per-seq shortest durations.
struct Timed {
  int kind = 0;  // into kKinds
  std::string pg_name;
  std::string pg_desc;
  std::string op_name;
  std::string profiling_name;
  std::vector<int> members;
  std::vector<double> samples_ms;
};

// (members, op name) -> Timed, from completed collectives every member recorded.
std::map<std::pair<std::string, std::string>, Timed> time_instances(const std::map<int, FrDump>& dumps) {
  // (pg name + members, seq) -> shortest duration, members seen, a representative entry.
  struct At { double min_ms = 0; size_t seen = 0; const FrEntry* e = nullptr; std::vector<int> members; };
  std::map<std::pair<std::string, int64_t>, At> by_seq;
  for (const auto& [rank, dump] : dumps) {
    std::map<std::string, std::string> key_of;  // pg name -> pg name + members, made once per dump
    for (const FrEntry& e : dump.entries) {
      if (e.is_p2p || e.state() != "completed" || e.collective_seq_id < 0 || !e.duration_ms()) continue;
      auto g = dump.groups.find(e.pg_name());
      if (g == dump.groups.end() || g->second.ranks.empty()) continue;
      auto key = key_of.find(e.pg_name());
      if (key == key_of.end()) key = key_of.emplace(e.pg_name(), e.pg_name() + format_ranks(g->second.ranks)).first;
      At& at = by_seq[{key->second, e.collective_seq_id}];
      if (!at.e || *e.duration_ms() < at.min_ms) at.min_ms = *e.duration_ms();
      if (!at.e) at.e = &e, at.members = g->second.ranks;
      ++at.seen;
    }
  }
  std::map<std::pair<std::string, std::string>, Timed> out;
  for (const auto& [key, at] : by_seq) {
    if (at.seen != at.members.size()) continue;  // a member's entry rotated out: not the collective's time
    const std::string desc = at.e->pg_desc();
    std::optional<int> kind = kind_of(desc);
    if (!kind) continue;
    Timed& t = out[{key.first, at.e->op_name()}];
    t.kind = *kind;
    t.pg_name = at.e->pg_name();
    t.pg_desc = desc;
    t.op_name = at.e->op_name();
    t.profiling_name = at.e->profiling_name();
    t.members = at.members;
    t.samples_ms.push_back(at.min_ms);
  }
  return out;
}

// The model's healthy time for one timed instance; nullopt when it cannot say.
std::optional<double> expected_ms(const HealthyModel& model, const Timed& t) {
  return model.healthy_ms(GroupCollective{t.op_name, t.profiling_name, kKinds[static_cast<size_t>(t.kind)], t.members});
}

// Per group kind: the instances timed, and the slow ones with their worst ratio.
struct KindVerdict {
  std::map<std::string, std::pair<const Timed*, double>> worst;  // instance -> (timed, ratio)
  std::vector<std::string> slow;
};

std::optional<ModelSlowLink> judge(const HealthyModel& model,
                                   const std::map<std::pair<std::string, std::string>, Timed>& timed) {
  std::map<int, KindVerdict> kinds;
  for (const auto& [key, t] : timed) {
    std::optional<double> exp = expected_ms(model, t);
    if (!exp || *exp <= 0 || t.samples_ms.empty()) continue;
    const double ratio = median_of(t.samples_ms) / *exp;
    auto& w = kinds[t.kind].worst[key.first];
    if (!w.first || ratio > w.second) w = {&t, ratio};
  }
  std::optional<ModelSlowLink> best;
  double best_ratio = kSlowRatio;
  for (auto& [kind, kv] : kinds) {
    ModelSlowLink link;
    double worst = 0;
    const Timed* worst_t = nullptr;
    for (const auto& [inst, w] : kv.worst) {
      if (w.second <= kSlowRatio) continue;
      link.slow.push_back(w.first->members);
      if (w.second > worst) worst = w.second, worst_t = w.first;
    }
    if (!worst_t || worst <= best_ratio) continue;
    link.pg_name = worst_t->pg_name;
    link.pg_desc = worst_t->pg_desc;
    link.op_name = worst_t->op_name;
    link.instances = static_cast<int>(kv.worst.size());
    link.all_slow = link.slow.size() == kv.worst.size() && link.instances > 1;
    link.achieved_ms = median_of(worst_t->samples_ms);
    link.expected_ms = link.achieved_ms / worst;
    best = link;
    best_ratio = worst;
  }
  return best;
}

}  // namespace

HealthyModel::~HealthyModel() = default;

namespace {

// model.json as a HealthyModel: the entry for the op's name on the group kind,
// at the shape the members form (nodes from gpus_per_node; members of one node
// are counted together, as Plan::group_shape does).
class RecordedModel final : public HealthyModel {
 public:
  explicit RecordedModel(const ModelExpectations& m) : m_(m) {}

  std::optional<double> healthy_ms(const GroupCollective& c) const override {
    if (c.members.empty()) return std::nullopt;
    std::map<int, int> per_node;
    for (int r : c.members) {
      if (r < 0) return std::nullopt;
      ++per_node[r / m_.gpus_per_node];
    }
    int most = 0;
    for (const auto& [node, n] : per_node) most = std::max(most, n);
    for (const ModelCollective& mc : m_.collectives) {
      if (mc.op_name != c.op_name || mc.group != c.group_kind) continue;
      for (const ModelShapeTime& h : mc.healthy) {
        if (h.ranks == static_cast<int>(c.members.size()) && h.nodes == static_cast<int>(per_node.size()) &&
            h.ranks_per_node == most)
          return static_cast<double>(h.time_ns) * 1e-6;  // as Duration::to_millis()
      }
      return std::nullopt;
    }
    return std::nullopt;
  }

  std::string describe() const override { return m_.cost_model + ", " + m_.scenario_file; }

 private:
  const ModelExpectations& m_;
};

}  // namespace

std::unique_ptr<HealthyModel> recorded_model(const Record& rec) {
  if (!rec.model) return nullptr;
  return std::make_unique<RecordedModel>(*rec.model);
}

ModelCheck check_against_model(const Record& rec, const HealthyModel* model) {
  ModelCheck out;
  if (rec.dumps.empty()) return out;
  if (!model) return out;
  out.loaded = true;
  const auto timed = time_instances(rec.dumps);
  out.slow = judge(*model, timed);
  out.text = "model (" + model->describe() + "): " +
             (timed.empty() ? std::string("no collective durations in the dumps (timing off): nothing to compare")
              : out.slow ? std::to_string(out.slow->slow.size()) + " of " + std::to_string(out.slow->instances) +
                             " " + out.slow->pg_desc + " group(s) slower than 0.8x the healthy fabric's bandwidth"
                       : std::string("every group's collectives within 1.25x of the healthy fabric's time"));
  return out;
}

}  // namespace fleetsim::diagnose
