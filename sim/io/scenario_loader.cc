// load_scenario(): YAML text -> YamlNode tree -> --set overrides -> a fully
// validated Scenario. This file holds the entry points and the top-level,
// fleet, parallel, job and expect sections; the step program and the faults
// are read in step_reader.cc and fault_reader.cc.
#include "sim/io/scenario_loader.h"

#include "fleetsim/cause.h"
#include "fleetsim/file_read.h"
#include "sim/io/scenario_reader.h"
#include "sim/model/nccl_model.h"
#include "sim/io/yaml_tree.h"

namespace fleetsim {
namespace {

struct Preset {
  std::string_view name;
  int gpus_per_node;
  int sms_per_gpu;
  double nvlink_GBps;
  int nics_per_node;
  double nic_Gbps;
};
constexpr Preset kPresets[] = {
    {"dgx-h100", 8, 132, 450.0, 8, 400.0},
    {"dgx-a100", 8, 108, 300.0, 8, 200.0},
    {"dgx-h200", 8, 132, 450.0, 8, 400.0},
    {"hgx-b200", 8, 148, 900.0, 8, 400.0},
};
constexpr int64_t kMaxRanks = 1 << 24;

const Names kTopKeys = {"name", "description", "fleet", "parallel", "job", "step", "faults", "expect",
                        "calibration"};
const Names kFleetKeys = {"system", "nodes", "gpus_per_node", "sms_per_gpu", "nvlink_bandwidth",
                          "nvlink_latency", "nics_per_node", "nic_bandwidth", "net_latency",
                          "oversubscription", "gpudirect", "cpu"};
const Names kParallelKeys = {"tp", "dp", "pp"};
const Names kJobKeys = {"steps", "seed", "watchdog", "telemetry_period", "launch_queue",
                        "flight_recorder_entries", "flight_recorder", "dump_wait", "crash_detect",
                        "collective_model", "nccl", "backend"};
const Names kNcclKeys = {"version", "algo", "proto"};
const Names kExpectKeys = {"outcome", "hang_step", "steps_completed", "cause", "culprit"};
const Names kOutcomes = {"completed", "hang", "crash", "deadlock"};

}  // namespace

Scenario ScenarioReader::read(const YamlNode& root) {
  if (!check_map(root, "scenario (top level)", kTopKeys)) return s_;
  if (const YamlNode* n = require(root, "name", "scenario (top level)")) {
    if (auto v = as_string(*n, "name")) s_.name = *v;
  }
  if (const YamlNode* n = root.find("description")) {
    if (auto v = as_string(*n, "description")) s_.description = *v;
  }
  if (const YamlNode* n = require(root, "fleet", "scenario (top level)")) read_fleet(*n, &s_.fleet);
  read_parallel(root.find("parallel"), root.loc, &s_.parallel);
  if (const YamlNode* n = root.find("job")) read_job(*n, &s_.job);
  if (const YamlNode* n = require(root, "step", "scenario (top level)")) {
    read_program(*n, "step", &s_.step);
    check_logs();
  }
  if (const YamlNode* n = root.find("faults")) read_faults(*n, &s_.faults);
  if (const YamlNode* n = root.find("expect")) read_expect(*n, &s_.expect);
  if (const YamlNode* n = root.find("calibration")) {
    if (auto v = as_string(*n, "calibration")) {
      s_.calibration = *v;
      s_.calibration_loc = n->loc;
    }
  }
  return s_;
}

void ScenarioReader::read_fleet(const YamlNode& n, Fleet* fleet) {
  const size_t errors_before = error_count();
  if (!check_map(n, "fleet", kFleetKeys)) return;
  for (std::string_view key : kFleetKeys) {
    if (n.find(key)) fleet->keys_set.emplace_back(key);
  }
  fleet->system = "dgx-h100";
  if (const YamlNode* sys = n.find("system")) {
    if (auto v = as_string(*sys, "fleet.system")) fleet->system = *v;
  }
  const Preset* preset = nullptr;
  Names systems;
  for (const Preset& p : kPresets) {
    systems.push_back(p.name);
    if (p.name == fleet->system) preset = &p;
  }
  systems.push_back("custom");
  if (preset) {
    fleet->gpus_per_node = preset->gpus_per_node;
    fleet->sms_per_gpu = preset->sms_per_gpu;
    fleet->nvlink_bandwidth_GBps = preset->nvlink_GBps;
    fleet->nics_per_node = preset->nics_per_node;
    fleet->nic_bandwidth_Gbps = preset->nic_Gbps;
  } else if (fleet->system == "custom") {
    require(n, "gpus_per_node", "fleet (system: custom)");
  } else if (const YamlNode* sys = n.find("system"); sys && sys->is_scalar()) {
    unknown_name(sys->loc, "fleet.system preset", fleet->system, systems);
  }
  if (const YamlNode* v = require(n, "nodes", "fleet")) {
    if (auto x = as_int(*v, "fleet.nodes", 1, kMaxRanks)) fleet->nodes = static_cast<int>(*x);
  }
  read_int(n, "gpus_per_node", "fleet", 1, 1024, &fleet->gpus_per_node);
  read_int(n, "sms_per_gpu", "fleet", 1, 100000, &fleet->sms_per_gpu);
  read_int(n, "nics_per_node", "fleet", 1, 1024, &fleet->nics_per_node);
  if (const YamlNode* v = n.find("nvlink_bandwidth")) {
    if (auto x = as_bandwidth(*v, "fleet.nvlink_bandwidth")) fleet->nvlink_bandwidth_GBps = *x;
  }
  if (const YamlNode* v = n.find("nic_bandwidth")) {
    // Stored in Gb/s, as NICs are rated.
    if (auto x = as_bandwidth(*v, "fleet.nic_bandwidth")) fleet->nic_bandwidth_Gbps = *x * 8.0;
  }
  read_duration(n, "nvlink_latency", "fleet", &fleet->nvlink_latency);
  read_duration(n, "net_latency", "fleet", &fleet->net_latency);
  if (const YamlNode* v = n.find("oversubscription")) {
    if (auto x = as_number(*v, "fleet.oversubscription")) {
      if (*x >= 1.0) fleet->oversubscription = *x;
      else error(v->loc, "'fleet.oversubscription' is leaf:spine and must be >= 1 (got " + v->scalar + ")");
    }
  }
  if (const YamlNode* v = n.find("gpudirect")) {
    if (auto b = as_flag(*v, "fleet.gpudirect")) fleet->gpudirect = *b;
  }
  if (const YamlNode* v = n.find("cpu")) {
    if (auto s = as_string(*v, "fleet.cpu")) {
      if (*s == "intel" || *s == "amd") fleet->cpu = *s;
      else unknown_name(v->loc, "fleet.cpu", *s, {"intel", "amd"});
    }
  }
  if (error_count() == errors_before && static_cast<int64_t>(fleet->nodes) * fleet->gpus_per_node > kMaxRanks) {
    error(n.loc, "fleet has " + std::to_string(static_cast<int64_t>(fleet->nodes) * fleet->gpus_per_node) +
                     " ranks; at most " + std::to_string(kMaxRanks) + " are supported");
  }
  fleet_ok_ = error_count() == errors_before;
}

void ScenarioReader::read_parallel(const YamlNode* n, const SourceLoc& root_loc, Parallel* par) {
  const size_t errors_before = error_count();
  const SourceLoc loc = n ? n->loc : root_loc;
  if (n) {
    if (!check_map(*n, "parallel", kParallelKeys)) return;
    read_int(*n, "tp", "parallel", 1, kMaxRanks, &par->tp);
    read_int(*n, "dp", "parallel", 1, kMaxRanks, &par->dp);
    read_int(*n, "pp", "parallel", 1, kMaxRanks, &par->pp);
    par->pp_given = n->find("pp") != nullptr;
  }
  if (!fleet_ok_ || error_count() != errors_before) return;
  const int64_t ranks = s_.ranks();
  const std::string fleet_desc = std::to_string(ranks) + " ranks (" + std::to_string(s_.fleet.nodes) +
                                 " nodes x " + std::to_string(s_.fleet.gpus_per_node) + " GPUs)";
  const int64_t tp_pp = static_cast<int64_t>(par->tp) * par->pp;
  if (par->dp > 0) {
    if (tp_pp * par->dp != ranks) {
      // The usual way here is resizing the fleet with --set and forgetting dp: say what fits.
      const std::string hint = ranks % tp_pp == 0 ? "; set parallel.dp=" + std::to_string(ranks / tp_pp) +
                                                        " (or omit dp to derive it) to fill the fleet"
                                                  : "; expected a fleet of tp*dp*pp ranks";
      return error(loc, "tp*dp*pp = " + std::to_string(par->tp) + "*" + std::to_string(par->dp) + "*" +
                            std::to_string(par->pp) + " = " + std::to_string(tp_pp * par->dp) +
                            " does not equal the fleet's " + fleet_desc + hint);
    }
  } else if (ranks % tp_pp != 0) {
    return error(loc, "tp*pp = " + std::to_string(tp_pp) + " does not divide the fleet's " + fleet_desc +
                          "; expected tp*pp to divide the rank count so dp = ranks/(tp*pp)");
  } else {
    par->dp = static_cast<int>(ranks / tp_pp);
  }
  parallel_ok_ = true;
}

void ScenarioReader::read_job(const YamlNode& n, Job* job) {
  if (!check_map(n, "job", kJobKeys)) return;
  const size_t errors_before = error_count();
  read_int(n, "steps", "job", 1, int64_t{1} << 40, &job->steps);
  job_ok_ = error_count() == errors_before;
  read_int(n, "seed", "job", 0, INT64_MAX, &job->seed);
  if (const YamlNode* v = n.find("watchdog")) {
    if (v->is_scalar() && v->scalar == "off") {
      job->watchdog = std::nullopt;
    } else if (auto d = v->is_scalar() ? parse_duration(v->scalar) : Result<Duration>(Diagnostic{});
               !d.ok()) {
      // Keep the unit parser's detail when it adds any ("unknown unit 'mins'").
      const std::string& why = v->is_scalar() ? d.errors()[0].message : std::string();
      const bool adds = !why.empty() && why.rfind("expected a duration", 0) != 0;
      error(v->loc, "expected a duration like 10min or 'off' for 'job.watchdog', got " + v->describe() +
                        (adds ? " (" + why + ")" : std::string()));
    } else if (d->ns <= 0) {
      error(v->loc, "'job.watchdog' must be > 0; use 'off' to disable it");
    } else {
      job->watchdog = *d;
    }
  }
  if (const YamlNode* v = n.find("telemetry_period")) {
    if (auto d = as_duration(*v, "job.telemetry_period")) {
      if (d->ns <= 0) error(v->loc, "'job.telemetry_period' must be > 0 (got " + v->scalar + ")");
      else job->telemetry_period = *d;
    }
  }
  read_int(n, "launch_queue", "job", 1, 1 << 20, &job->launch_queue);
  read_int(n, "flight_recorder_entries", "job", 0, 1 << 24, &job->flight_recorder_entries);
  if (const YamlNode* v = n.find("flight_recorder")) read_flight_recorder(*v, &job->flight_recorder);
  read_duration(n, "dump_wait", "job", &job->dump_wait);
  read_duration(n, "crash_detect", "job", &job->crash_detect);
  if (const YamlNode* v = n.find("collective_model")) {
    if (auto s = as_string(*v, "job.collective_model")) {
      Names models;
      bool known = false;
      for (const CollectiveModelSpec& m : kCollectiveModels) {
        models.push_back(m.name);
        if (*s == m.name) job->collective_model = m.id, known = true;
      }
      if (!known) unknown_name(v->loc, "job.collective_model", *s, models);
    }
  }
  if (const YamlNode* v = n.find("backend")) {
    if (auto s = as_string(*v, "job.backend")) {
      Names names;
      bool known = false;
      for (const CommBackendSpec& b : kCommBackends) {
        names.push_back(b.name);
        if (*s == b.name) job->backend = b.id, known = true;
      }
      if (!known) unknown_name(v->loc, "job.backend", *s, names);
    }
  }
  if (const YamlNode* v = n.find("nccl")) read_nccl(*v, job);
}

// job.flight_recorder: {format, timing, only_active, stack_traces}, each one of its
// kFrSettings row's two values; on/off and true/false stand for each other.
void ScenarioReader::read_flight_recorder(const YamlNode& n, FlightRecorderSettings* fr) {
  Names keys;
  for (const FrSettingSpec& spec : kFrSettings) keys.push_back(spec.key);
  if (!check_map(n, "job.flight_recorder", keys)) return;
  auto same = [](std::string_view a, std::string_view b) {
    auto flag = [](std::string_view x) { return x == "on" || x == "true" ? 1 : x == "off" || x == "false" ? 0 : -1; };
    return a == b || (flag(a) >= 0 && flag(a) == flag(b));
  };
  for (const FrSettingSpec& spec : kFrSettings) {
    const YamlNode* v = n.find(spec.key);
    if (!v) continue;
    const std::string what = "job.flight_recorder." + std::string(spec.key);
    auto s = as_string(*v, what);
    if (!s) continue;
    int found = -1;
    for (int i = 0; i < 2; ++i)
      if (same(*s, spec.values[i])) found = i;
    if (found >= 0) fr->choice[static_cast<int>(spec.id)] = static_cast<uint8_t>(found);
    else unknown_name(v->loc, what, *s, Names{spec.values[0], spec.values[1]});
  }
}

// job.nccl: {version, algo, proto}, checked with the NCCL model's own parsers.
void ScenarioReader::read_nccl(const YamlNode& n, Job* job) {
  if (!check_map(n, "job.nccl", kNcclKeys)) return;
  if (const YamlNode* v = n.find("version")) {
    if (auto s = as_string(*v, "job.nccl.version")) {
      if (nccl::constants_for_version(*s)) job->nccl_version = *s;
      else error(v->loc, "unsupported NCCL version '" + *s + "'; expected " + nccl::kSupportedVersions);
    }
  }
  uint32_t mask = 0;
  if (const YamlNode* v = n.find("algo")) {
    if (auto s = as_string(*v, "job.nccl.algo")) {
      const std::string why = nccl::parse_algo_list(*s, &mask);
      if (why.empty()) job->nccl_algo = *s;
      else error(v->loc, "job.nccl.algo: " + why);
    }
  }
  if (const YamlNode* v = n.find("proto")) {
    if (auto s = as_string(*v, "job.nccl.proto")) {
      const std::string why = nccl::parse_proto_list(*s, &mask);
      if (why.empty()) job->nccl_proto = *s;
      else error(v->loc, "job.nccl.proto: " + why);
    }
  }
}

void ScenarioReader::read_expect(const YamlNode& n, Expect* expect) {
  if (!check_map(n, "expect", kExpectKeys)) return;
  if (const YamlNode* v = n.find("outcome")) {
    if (auto s = as_string(*v, "expect.outcome")) {
      bool known = false;
      for (std::string_view o : kOutcomes) known = known || o == *s;
      if (known) expect->outcome = *s;
      else unknown_name(v->loc, "expect.outcome", *s, kOutcomes);
    }
  }
  if (const YamlNode* v = n.find("hang_step")) {
    if (auto x = as_int(*v, "expect.hang_step", 1, INT64_MAX)) expect->hang_step = *x;
  }
  if (const YamlNode* v = n.find("steps_completed")) {
    if (auto x = as_int(*v, "expect.steps_completed", 0, INT64_MAX)) expect->steps_completed = *x;
  }
  if (const YamlNode* v = n.find("cause")) {
    if (auto s = as_string(*v, "expect.cause")) {
      if (cause_by_name(*s)) {
        expect->cause = *s;
      } else {
        Names causes;
        for (const CauseSpec& c : kCauses) causes.push_back(c.name);
        unknown_name(v->loc, "expect.cause", *s, causes);
      }
    }
  }
  if (const YamlNode* v = n.find("culprit")) {
    if (!v->is_seq()) return error(v->loc, "expected a list of ranks for 'expect.culprit', got " + v->describe());
    std::vector<int> ranks;
    for (const YamlNode& r : v->items) {
      if (auto x = as_int(r, "expect.culprit", 0, INT32_MAX)) {
        if (fleet_ok_ && *x >= s_.ranks()) error(r.loc, "rank " + std::to_string(*x) + " does not exist; the fleet has " +
                                                            std::to_string(s_.ranks()) + " ranks");
        else ranks.push_back(static_cast<int>(*x));
      }
    }
    expect->culprit = ranks;
  }
}

Result<Scenario> load_scenario_text(std::string_view yaml, const std::string& file_label,
                                    const std::vector<std::string>& overrides) {
  std::vector<Diagnostic> diags;
  YamlNode root;
  if (!parse_yaml(yaml, file_label, 0, &root, &diags)) return diags;
  for (const std::string& o : overrides) apply_override(o, &root, &diags);
  if (!diags.empty()) return diags;
  ScenarioReader reader;
  Scenario s = reader.read(root);
  if (reader.has_errors()) return reader.take_diagnostics();
  s.file = file_label;
  return s;
}

Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  Result<std::string> text = read_file_capped(path, kScenarioFileMax, "scenario file");
  if (!text.ok()) {
    Diagnostic d = text.errors().front();
    if (d.message.rfind("cannot open", 0) == 0) d.message += "; expected a readable YAML file";
    return d;
  }
  return load_scenario_text(*text, path, overrides);
}

}  // namespace fleetsim
