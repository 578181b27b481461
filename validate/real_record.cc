// Merging the per-process part files of a real run into a RunRecord folder.
// Steps go through StepTable and the launcher's lines through JobLog, the same
// observers the simulator uses; summary.json has the simulator's keys plus a
// "real" block (scales, mpirun's exit status, wall time).
#include "validate/real_record.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim/observe/job_log.h"
#include "fleetsim/record.h"
#include "sim/observe/summary.h"

namespace fs = std::filesystem;

namespace fleetsim::validate {

std::string part_path(const std::string& dir, int rank) {
  return dir + "/" + kPartsDir + "/rank_" + std::to_string(rank) + ".tsv";
}

std::string telemetry_part_path(const std::string& dir, int rank) {
  return dir + "/" + kPartsDir + "/rank_" + std::to_string(rank) + ".tel";
}

namespace {

constexpr int64_t kPollNs = 100'000'000;  // the watchdog's poll (kWatchdogThreadSleepMillis)

struct Timeout {
  int rank = 0;
  int64_t t = 0, created = 0, step = 0;
  int group = 0;
  uint32_t seq = 0, op = 0;
};

struct Parts {
  std::vector<std::tuple<int64_t, int, int64_t>> step_ends;   // t, rank, step
  std::vector<std::tuple<int64_t, int, size_t, std::string>> log;  // t, rank, order, line
  std::vector<std::pair<std::pair<int64_t, int>, std::string>> telemetry;  // (t, rank), row
  std::vector<Timeout> timeouts;
  std::vector<int64_t> last_step, stuck;
  std::vector<uint8_t> done;
  int crash_rank = -1;
  int64_t crash_t = 0, crash_step = 0, end_t = 0;
};

std::vector<std::string> split_tabs(const std::string& line, size_t max_fields) {
  std::vector<std::string> out;
  size_t i = 0;
  while (out.size() + 1 < max_fields) {
    const size_t tab = line.find('\t', i);
    if (tab == std::string::npos) break;
    out.push_back(line.substr(i, tab - i));
    i = tab + 1;
  }
  out.push_back(line.substr(i));
  return out;
}

int64_t num(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

void read_part(const std::string& path, int r, Parts& p) {
  std::ifstream in(path);
  std::string line;
  size_t order = 0;
  const auto ru = static_cast<size_t>(r);
  while (std::getline(in, line)) {
    const std::vector<std::string> f = split_tabs(line, line.rfind("L\t", 0) == 0 ? 3 : 16);
    const std::string& tag = f[0];
    if (tag == "S" && f.size() >= 3) {
      p.step_ends.emplace_back(num(f[2]), r, num(f[1]));
      p.last_step[ru] = std::max(p.last_step[ru], num(f[1]));
      p.end_t = std::max(p.end_t, num(f[2]));
    } else if (tag == "L" && f.size() == 3) {
      p.log.emplace_back(num(f[1]), r, order++, f[2]);
    } else if (tag == "T" && f.size() >= 8) {
      const size_t n = f.size() >= 13 ? 13 : 8;  // with the driver's five figures, or without
      std::string row = f[2];
      for (size_t i = 3; i < n; ++i) row += "," + f[i];
      p.telemetry.push_back({{num(f[1]), r}, row});
    } else if (tag == "timeout" && f.size() >= 7) {
      Timeout t{r, num(f[1]), num(f[5]), num(f[6]), static_cast<int>(num(f[2])),
                static_cast<uint32_t>(num(f[3])), static_cast<uint32_t>(num(f[4]))};
      p.timeouts.push_back(t);
      p.end_t = std::max(p.end_t, t.t);
    } else if (tag == "crash" && f.size() >= 3) {
      p.crash_rank = r;
      p.crash_t = num(f[1]);
      p.crash_step = num(f[2]);
    } else if (tag == "stuck" && f.size() >= 2) {
      p.stuck[ru] = num(f[1]);
    } else if (tag == "done" && f.size() >= 2) {
      p.done[ru] = 1;
      p.end_t = std::max(p.end_t, num(f[1]));
    }
  }
}

nlohmann::ordered_json summary_json(const Plan& plan, const RealRun& run, const LaunchInfo& info) {
  using Json = nlohmann::ordered_json;
  const RunResult& r = run.result;
  Json j;
  add_scenario_fields(&j, plan);
  const bool gpu = info.backend != "mpi";
  j["executor"] = info.backend;
  j["cost_model"] = info.backend == "torch" ? "real (PyTorch under torchrun)"
                    : gpu                     ? "real (NCCL on CUDA GPUs)"
                                              : "real (OpenMPI processes)";
  j["outcome"] = outcome_name(r.outcome);
  j["steps_planned"] = plan.scenario.job.steps;
  j["steps_completed"] = r.steps_completed;
  j["sim_end_s"] = r.end.to_seconds();
  j["step_time_s"] = {{"mean", run.steps.mean_s}, {"p50", run.steps.p50_s}, {"p99", run.steps.p99_s},
                      {"max", run.steps.max_s}};
  add_outcome_fields(&j, plan, r, "no rank progressed and no watchdog fired: the launcher's deadline killed the job");
  j["real"] = {{"time_scale", info.time_scale}, {"bytes_scale", info.bytes_scale},
               {"mpirun_exit_code", info.exit_code}, {"killed_by_launcher", info.killed},
               {"wall_s", info.wall_s}, {"mpirun", info.mpirun_command},
               {"telemetry", info.backend == "torch" ? "not sampled: the torch backend writes no telemetry rows"
                             : gpu ? "gpu_util = NVML utilization.gpu (nvml_util), or without NVML the share of "
                                   "the period with a kernel or collective in flight; cpu_util = % CPU time of the "
                                   "process; sm_active = share in compute or a collective; tensor_active = share in "
                                   "compute; sm_clock_mhz, power_w, pcie_tx_kBps, pcie_rx_kBps from NVML (-1: none)"
                                 : "gpu_util = % of the period the process's main thread was running or runnable "
                                   "(/proc/self/schedstat); cpu_util = % CPU time (/proc/self/stat utime+stime); "
                                   "sm_active = share in compute or a collective; tensor_active = share in compute"}};
  OutputSet written = OutputSet::all();
  written.set(OutputFile::kTrace, false);
  written.set(OutputFile::kModel, false);  // a model's expectation belongs to the simulated side
  add_outputs_field(&j, written, {{output_file_name(OutputFile::kTrace), "not written by a real run"}});
  return j;
}

// The outcome from what the ranks reported: a crash beats a hang beats completion.
RunResult decide(const Plan& plan, Parts& p, const LaunchInfo& info) {
  RunResult r;
  r.end = SimTime{p.end_t};
  int64_t done_steps = INT64_MAX;
  for (int64_t s : p.last_step) done_steps = std::min(done_steps, s);
  r.steps_completed = done_steps == INT64_MAX ? 0 : done_steps;
  const bool all_done = std::all_of(p.done.begin(), p.done.end(), [](uint8_t d) { return d != 0; });
  // The first to time out is the one an ideal 100 ms watchdog fires first (lowest
  // rank on a tie, as in the simulator), not whichever thread the OS ran first.
  const int64_t timeout = plan.scenario.job.watchdog ? plan.scenario.job.watchdog->ns : 0;
  auto tick = [timeout](const Timeout& x) { return (x.created + timeout + kPollNs - 1) / kPollNs; };
  std::sort(p.timeouts.begin(), p.timeouts.end(), [&](const Timeout& a, const Timeout& b) {
    return tick(a) != tick(b) ? tick(a) < tick(b) : a.rank < b.rank;
  });
  int64_t lowest = INT64_MAX;
  for (size_t i = 0; i < p.stuck.size(); ++i)
    if (!p.done[i]) lowest = std::min(lowest, p.stuck[i] > 0 ? p.stuck[i] : p.last_step[i] + 1);
  if (p.crash_rank >= 0) {
    r.outcome = Outcome::kCrash;
    r.crash = {p.crash_rank, p.crash_step, SimTime{p.crash_t},
               SimTime{p.crash_t} + plan.scenario.job.crash_detect};
  } else if (!p.timeouts.empty()) {
    const Timeout& t = p.timeouts.front();
    r.outcome = Outcome::kHang;
    r.hang.step = lowest == INT64_MAX ? t.step : lowest;
    r.hang.stuck_since = SimTime{t.created};
    r.hang.detected_at = SimTime{t.t};
    r.hang.first_timeout_rank = t.rank;
    r.hang.group = static_cast<GroupKind>(t.group);
    r.hang.collective_seq_id = t.seq;
    r.hang.op = t.op;
    for (const Timeout& x : p.timeouts) r.hang.timed_out_ranks.push_back(x.rank);
  } else if (all_done && info.exit_code == 0) {
    r.outcome = Outcome::kCompleted;
  } else {
    r.outcome = info.killed ? Outcome::kDeadlock : Outcome::kCrash;
    r.stuck_step = lowest == INT64_MAX ? r.steps_completed + 1 : lowest;
    r.crash.step = r.stuck_step;
  }
  return r;
}

}  // namespace

Result<RealRun> merge_parts(const Plan& plan, const std::string& dir, const LaunchInfo& info) {
  Parts p;
  const auto n = static_cast<size_t>(plan.ranks);
  p.last_step.assign(n, 0);
  p.stuck.assign(n, 0);
  p.done.assign(n, 0);
  for (int r = 0; r < plan.ranks; ++r) {
    read_part(part_path(dir, r), r, p);
    read_part(telemetry_part_path(dir, r), r, p);
  }
  RealRun run;
  run.result = decide(plan, p, info);

  auto path_of = [&](OutputFile f) { return dir + "/" + output_file_name(f); };
  std::FILE* steps_f = std::fopen(path_of(OutputFile::kSteps).c_str(), "wb");
  std::FILE* log_f = std::fopen(path_of(OutputFile::kLog).c_str(), "wb");
  std::FILE* tel_f = std::fopen(path_of(OutputFile::kTelemetry).c_str(), "wb");
  if (!steps_f || !log_f || !tel_f) {
    for (std::FILE* f : {steps_f, log_f, tel_f}) if (f) std::fclose(f);
    Diagnostic d;
    d.loc.file = dir;
    d.message = "cannot write the merged RunRecord files";
    return d;
  }
  std::sort(p.step_ends.begin(), p.step_ends.end());
  StepTable table(plan, steps_f);
  for (const auto& [t, rank, step] : p.step_ends) table.on_step_end(rank, step, SimTime{t});
  table.on_end(run.result.end, run.result.outcome);
  run.steps = table.stats();

  std::sort(p.log.begin(), p.log.end());
  for (const auto& entry : p.log) std::fprintf(log_f, "%s\n", std::get<3>(entry).c_str());
  JobLog launcher(plan, log_f);  // torchrun-style lines for the end of the job
  if (run.result.outcome == Outcome::kCrash && run.result.crash.rank >= 0) {
    Fault f;
    f.kind = FaultKind::kCrash;
    launcher.on_fault(run.result.crash.rank, run.result.crash.at, f);
  }
  launcher.on_end(run.result.end, run.result.outcome);

  // The driver's columns appear when any rank sampled them (rows without them get -1).
  const bool nvml = std::any_of(p.telemetry.begin(), p.telemetry.end(),
                                [](const auto& e) { return std::count(e.second.begin(), e.second.end(), ',') == 10; });
  const std::span<const char* const> nvml_cols =
      nvml ? std::span<const char* const>(columns::kTelemetryNvml) : std::span<const char* const>();
  std::fputs(csv_header(columns::kTelemetry, columns::kTelemetryReal, nvml_cols).c_str(), tel_f);
  std::sort(p.telemetry.begin(), p.telemetry.end());
  for (const auto& [key, row] : p.telemetry) {
    // row: gpu_util,cpu_util,sm,tensor,nic,step[,5 NVML figures] -> the RunRecord's column order, extras last
    std::vector<std::string> c;
    std::stringstream ss(row);
    for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
    if (c.size() != 6 && c.size() != 11) continue;
    std::fprintf(tel_f, "%s,%d,%s,%s,%s,%s,%s,%s", format_seconds(key.first).c_str(), key.second, c[0].c_str(),
                 c[2].c_str(), c[3].c_str(), c[4].c_str(), c[5].c_str(), c[1].c_str());
    if (nvml) {
      for (size_t i = 6; i < 11; ++i) std::fprintf(tel_f, ",%s", i < c.size() ? c[i].c_str() : "-1");
    }
    std::fputc('\n', tel_f);
  }
  std::fclose(steps_f);
  std::fclose(log_f);
  std::fclose(tel_f);
  {
    std::ofstream f(dir + "/summary.json", std::ios::binary);
    f << summary_json(plan, run, info).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  }
  std::error_code ec;
  fs::remove_all(fs::path(dir) / kPartsDir, ec);
  return run;
}

}  // namespace fleetsim::validate
