// The drill's page and its host-side evidence: an nvidia-smi table per node built
// from telemetry.csv at the page time, the job.log tail, and the step log. Power,
// temperature and memory are derived (stated under the table), never measured.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "sim/drill/drill_incident.h"
#include "sim/diagnose/signals.h"

namespace fleetsim::drill {
namespace {

std::string clock_of(double s) {
  char buf[32];
  const auto t = static_cast<int64_t>(s);
  std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", static_cast<long long>(t / 3600),
                static_cast<long long>(t / 60 % 60), static_cast<long long>(t % 60));
  return buf;
}

// The telemetry row of each rank at the last sample not after `t`.
std::map<int, diagnose::TelemetryRow> sample_at(const diagnose::Record& rec, double t) {
  std::map<int, diagnose::TelemetryRow> out;
  for (const auto& row : rec.telemetry) {
    if (row.time_s <= t + 1e-9) out[row.rank] = row;
  }
  return out;
}

struct GpuModel {
  const char* name;
  int power_cap_w;
  int memory_mib;
};

GpuModel gpu_model(const Plan& plan) {
  if (plan.scenario.fleet.system == "dgx-a100") return {"NVIDIA A100-SXM4-80GB", 400, 81920};
  return {"NVIDIA H100 80GB HBM3", 700, 81559};
}

void smi_row(std::string& out, const Incident& inc, int rank, const diagnose::TelemetryRow* row, bool alive) {
  const GpuModel m = gpu_model(inc.plan);
  const int local = rank % inc.plan.scenario.fleet.gpus_per_node;
  const double util = alive && row ? row->gpu_util : 0;
  const double sm = alive && row ? row->sm_active : 0;
  const double tensor = alive && row ? row->tensor_active : 0;
  const double idle_w = m.power_cap_w * 0.1;
  const int power = static_cast<int>(std::lround(idle_w + (m.power_cap_w * 0.9 - idle_w) * (0.3 * sm + 0.7 * tensor)));
  const int temp = 30 + power / 15;
  const int mem = alive ? 61440 + (rank * 397) % 2048 : 1;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "| %3d  %-26s  On  |   00000000:%02X:00.0 Off |                    0 |\n"
                "| N/A   %2dC    P0           %4dW / %4dW |  %6dMiB / %6dMiB |    %3d%%      Default |\n",
                local, m.name, 0x18 + local * 0x10 % 0xE0, temp, power, m.power_cap_w, mem, m.memory_mib,
                static_cast<int>(std::lround(util)));
  out += buf;
  out += "+-----------------------------------------+------------------------+----------------------+\n";
}

std::string smi_node(const Incident& inc, int node, const std::map<int, diagnose::TelemetryRow>& at) {
  const int gpn = inc.plan.scenario.fleet.gpus_per_node;
  std::string out = "node" + std::to_string(node) + ": $ nvidia-smi\n";
  out += "+-----------------------------------------------------------------------------------------+\n"
         "| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n"
         "|-----------------------------------------+------------------------+----------------------+\n"
         "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
         "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
         "|=========================================+========================+======================|\n";
  std::string procs;
  for (int local = 0; local < gpn; ++local) {
    const int rank = node * gpn + local;
    const RankView& v = inc.ranks[static_cast<size_t>(rank)];
    const bool alive = !v.absent && !v.crashed && inc.result.outcome != Outcome::kCrash;
    auto it = at.find(rank);
    smi_row(out, inc, rank, it == at.end() ? nullptr : &it->second, alive);
    if (alive) {
      char p[128];
      std::snprintf(p, sizeof p, "|  %4d   N/A  N/A     %5d      C   /usr/bin/python3                          %5dMiB |\n",
                    local, 1000 + rank, 61440 + (rank * 397) % 2048 - 512);
      procs += p;
    }
  }
  out += "| Processes:                                                                              |\n";
  out += procs.empty() ? "|  No running processes found                                                             |\n" : procs;
  out += "+-----------------------------------------------------------------------------------------+\n";
  return out;
}

}  // namespace

std::string render_page(const Incident& inc) {
  const RunResult& r = inc.result;
  const std::string who = "job " + inc.job_name + " (" + std::to_string(inc.plan.ranks) + " GPUs on " +
                          std::to_string(inc.plan.scenario.fleet.nodes) + " nodes)";
  char buf[512];
  switch (r.outcome) {
    case Outcome::kHang:
      std::snprintf(buf, sizeof buf,
                    "PagerDuty [P1] %s: no training step completed since %s (step %lld); "
                    "NCCL watchdog timeouts in the job log at %s.",
                    who.c_str(), clock_of(inc.fault_s).c_str(), static_cast<long long>(r.steps_completed),
                    clock_of(inc.page_s).c_str());
      break;
    case Outcome::kDeadlock:
      std::snprintf(buf, sizeof buf,
                    "PagerDuty [P1] %s: no training step completed in 15 min (last: step %lld at %s). "
                    "No errors in the job log.",
                    who.c_str(), static_cast<long long>(r.steps_completed), clock_of(inc.fault_s).c_str());
      break;
    case Outcome::kCrash:
      std::snprintf(buf, sizeof buf, "PagerDuty [P1] %s FAILED at %s: torchrun reports a worker exited; job torn down.",
                    who.c_str(), clock_of(inc.page_s).c_str());
      break;
    case Outcome::kCompleted: {
      // The alert compares recent steps with the job's healthy step (before the
      // slowdown began, or the fault-free step when it was slow from the start).
      const auto& steps = inc.record.steps;
      double before = 0, late = 0;
      int n_before = 0, n_late = 0;
      for (size_t i = 0; i < steps.size(); ++i) {
        if (steps[i].start_s < inc.fault_s) before += steps[i].duration_s, ++n_before;
        if (i + 20 >= steps.size()) late += steps[i].duration_s, ++n_late;
      }
      late = n_late > 0 ? late / n_late : 0;
      const bool from_start = n_before == 0;
      const double healthy = from_start ? inc.baseline_step_ns / 1e9 : before / n_before;
      const int down = late > 0 ? static_cast<int>(std::lround(100 * (1 - healthy / late))) : 0;
      const std::string how = down >= 1 ? "throughput down " + std::to_string(down) + "%" : "throughput below plan";
      if (from_start) {
        std::snprintf(buf, sizeof buf,
                      "PagerDuty [P2] %s: %s from the first step (step time %.3f s; this job's healthy step is "
                      "%.3f s). No errors in the job log.",
                      who.c_str(), how.c_str(), late, healthy);
      } else {
        std::snprintf(buf, sizeof buf,
                      "PagerDuty [P2] %s: %s since %s (step time %.3f s -> %.3f s). No errors in the job log.",
                      who.c_str(), how.c_str(), clock_of(inc.fault_s).c_str(), healthy, late);
      }
      break;
    }
  }
  return std::string(buf) + "\n";
}

std::string render_nvidia_smi(const Incident& inc, int node) {
  const auto at = sample_at(inc.record, inc.result.outcome == Outcome::kDeadlock ? 1e300 : inc.page_s);
  std::string out;
  for (int n = 0; n < inc.plan.scenario.fleet.nodes; ++n) {
    if (node < 0 || node == n) out += smi_node(inc, n, at);
  }
  if (out.empty()) return "nvidia-smi: no such node " + std::to_string(node) + "\n";
  out += "(pdsh -w node[0-" + std::to_string(inc.plan.scenario.fleet.nodes - 1) +
         "] nvidia-smi. GPU-Util is telemetry.csv's gpu_util at the page; power is derived from "
         "sm_active and tensor_active, temperature from power, memory is the job's fixed footprint)\n";
  return out;
}

std::string render_logs(const Incident& inc, int rank) {
  std::vector<std::string> lines;
  for (const std::string& l : inc.record.log_lines) {
    if (rank < 0 || diagnose::rank_of_line(l) == rank) lines.push_back(l);
  }
  if (lines.empty()) {
    return rank < 0 ? "job.log is empty\n" : "no line from rank " + std::to_string(rank) + " in job.log\n";
  }
  const size_t keep = 14;
  std::string out = "$ tail -n " + std::to_string(keep) + " job.log" + (rank < 0 ? "" : " | grep rank" + std::to_string(rank)) + "\n";
  if (lines.size() > keep) out += "[... " + std::to_string(lines.size() - keep) + " earlier lines]\n";
  for (size_t i = lines.size() > keep ? lines.size() - keep : 0; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

std::string render_steps(const Incident& inc) {
  const auto& steps = inc.record.steps;
  if (steps.empty()) return "step log: no step ever completed\n";
  std::string out = "step log (rank 0's train.py prints one line per step; job clock):\n";
  const size_t from = steps.size() > 6 ? steps.size() - 6 : 0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "  %s step %5lld  %.3f s/step\n", clock_of(steps.front().end_s).c_str(),
                static_cast<long long>(steps.front().step), steps.front().duration_s);
  if (from > 0) out += std::string(buf) + "  ...\n";
  for (size_t i = from; i < steps.size(); ++i) {
    std::snprintf(buf, sizeof buf, "  %s step %5lld  %.3f s/step\n", clock_of(steps[i].end_s).c_str(),
                  static_cast<long long>(steps[i].step), steps[i].duration_s);
    out += buf;
  }
  if (inc.result.outcome != Outcome::kCompleted) {
    out += "  (nothing since " + clock_of(steps.back().end_s) + "; the page came at " + clock_of(inc.page_s) + ")\n";
  }
  return out;
}

}  // namespace fleetsim::drill
