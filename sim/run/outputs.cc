// Output selection: the bounded defaults at scale, and `--outputs`.
#include "sim/run/outputs.h"

#include <algorithm>

namespace fleetsim {

namespace {
constexpr int kTelemetryAllRanksMax = 512, kTelemetrySample = 64;
constexpr int kTraceRanksMax = 64;
constexpr int kFrRanksMax = 1024;
constexpr int64_t kFrEntriesTotal = int64_t{1} << 18;

std::vector<int> first_ranks(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = i;
  return v;
}

Result<OutputSelection> select_requested(const Plan& plan, const std::vector<std::string>& requested) {
  OutputSelection s;
  s.fr_capacity = plan.scenario.job.flight_recorder_entries;
  s.files = OutputSet();
  for (const std::string& name : requested) {
    const std::optional<OutputFile> f = output_by_cli_name(name);
    if (!f) {
      Diagnostic d;
      d.loc.file = "--outputs";
      d.message = "unknown output '" + name + "' (expected " + output_cli_names() + ")";
      return d;
    }
    s.files.set(*f);
  }
  s.telemetry_ranks = s.trace_ranks = first_ranks(plan.ranks);
  s.lockstep_ok = std::all_of(std::begin(kOutputs), std::end(kOutputs),
                              [&](const OutputSpec& o) { return o.lockstep || !s.files.has(o.id); });
  return s;
}

OutputSelection select_default(const Plan& plan) {
  OutputSelection s;
  const int n = plan.ranks;
  s.fr_capacity = plan.scenario.job.flight_recorder_entries;
  s.telemetry_ranks = first_ranks(std::min(n, n <= kTelemetryAllRanksMax ? n : kTelemetrySample));
  if (n > kTelemetryAllRanksMax)
    s.notes.emplace_back("telemetry.csv", "ranks 0-" + std::to_string(kTelemetrySample - 1) + " only (" +
                                              std::to_string(n) + " ranks > " +
                                              std::to_string(kTelemetryAllRanksMax) + "; --outputs telemetry samples all)");
  s.files.set(OutputFile::kTrace, n <= kTraceRanksMax);
  if (s.has(OutputFile::kTrace)) s.trace_ranks = first_ranks(n);
  else s.notes.emplace_back("trace.json", "skipped (" + std::to_string(n) + " ranks > " +
                                              std::to_string(kTraceRanksMax) + "; --outputs trace writes it)");
  s.files.set(OutputFile::kFr, n <= kFrRanksMax);
  if (!s.has(OutputFile::kFr)) s.notes.emplace_back("fr/", "skipped (" + std::to_string(n) + " ranks > " +
                                                        std::to_string(kFrRanksMax) + "; --outputs fr writes it)");
  const int64_t cap = std::max<int64_t>(16, kFrEntriesTotal / n);
  if (s.has(OutputFile::kFr) && cap < s.fr_capacity) {
    s.fr_capacity = static_cast<int>(cap);
    s.notes.emplace_back("fr/", "last " + std::to_string(cap) + " entries per rank (ring buffer reduced from " +
                                    std::to_string(plan.scenario.job.flight_recorder_entries) + " at this scale)");
  }
  s.lockstep_ok = n > kFrRanksMax;
  return s;
}
}  // namespace

Result<OutputSelection> select_outputs(const Plan& plan, const std::optional<std::vector<std::string>>& requested) {
  Result<OutputSelection> r = requested ? select_requested(plan, *requested) : select_default(plan);
  if (!r.ok()) return r;
  OutputSelection& s = *r;
  if (plan.scenario.job.flight_recorder_entries == 0 && s.has(OutputFile::kFr)) {
    s.files.set(OutputFile::kFr, false);
    s.notes.emplace_back("fr/", "skipped (job.flight_recorder_entries is 0: the recorder is off)");
  }
  return r;
}

void note_lockstep_outputs(OutputSelection* o) {
  const char* why = "skipped: the lockstep executor ran (--executor event writes it)";
  for (const OutputSpec& spec : kOutputs) {
    if (spec.lockstep || !o->has(spec.id)) continue;
    o->notes.emplace_back(spec.file_name, why);
    o->files.set(spec.id, false);
  }
}

}  // namespace fleetsim
