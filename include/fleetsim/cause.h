// The causes `fleetsim diagnose` can name, once: the enum the analyzer returns,
// the names the report, --json, the scenario loader's `expect.cause`, the CLI
// (`fleetsim list causes`) and the docs test read. A new cause is one row here
// plus the rule in sim/diagnose/ that finds it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fleetsim {

enum class Cause : uint8_t {
  kNone,
  kExtraCollective,
  kMissingCollective,
  kMismatchedCollective,
  kRankStalled,
  kRankCrashed,
  kStraggler,
  kRotatingStraggler,
  kSlowLink,
  kNvlinkDegraded,
  kNetworkError,
  kRanksAbsent,
  kCpuBlocked,
  kUnknown,
};
inline constexpr int kCauseCount = 14;

struct CauseSpec {
  Cause cause;
  const char* name;     // as printed and as `expect.cause` spells it
  const char* meaning;  // one line: what the evidence showed
};

// INVARIANT: kCauses[i].cause == static_cast<Cause>(i).
inline constexpr CauseSpec kCauses[kCauseCount] = {
    {Cause::kNone, "none", "healthy: nothing to blame"},
    {Cause::kExtraCollective, "extra_collective", "the culprit issued a collective the others did not"},
    {Cause::kMissingCollective, "missing_collective", "the culprit, alive, skipped a collective the others issued"},
    {Cause::kMismatchedCollective, "mismatched_collective",
     "matched collectives differ in type, size or dtype on the culprit"},
    {Cause::kRankStalled, "rank_stalled", "the culprit stopped issuing work, its GPU idle (its CPU is stuck)"},
    {Cause::kRankCrashed, "rank_crashed", "the culprit's process died"},
    {Cause::kStraggler, "straggler", "a slow run: one rank (or node) arrives last, consistently"},
    {Cause::kRotatingStraggler, "rotating_straggler",
     "a slow run: transient stalls that hit a different rank each time"},
    {Cause::kSlowLink, "slow_link", "a slow run: one group's bus bandwidth far below its siblings' or the model's"},
    {Cause::kNvlinkDegraded, "nvlink_degraded",
     "a slow run: groups within one node far below the model's bandwidth (NVLink or NVSwitch)"},
    {Cause::kNetworkError, "network_error", "NCCL reported a network error (a NIC or link down)"},
    {Cause::kRanksAbsent, "ranks_absent", "ranks that never started: no dump, no log, nothing completed"},
    {Cause::kCpuBlocked, "cpu_blocked", "every GPU idle: all ranks blocked on CPU-side work (a store barrier)"},
    {Cause::kUnknown, "unknown", "hung or slow, but the evidence singles nobody out"},
};

constexpr std::string_view cause_name(Cause c) { return kCauses[static_cast<int>(c)].name; }

// The cause named `name`, or nullopt.
constexpr std::optional<Cause> cause_by_name(std::string_view name) {
  for (const CauseSpec& c : kCauses)
    if (name == c.name) return c.cause;
  return std::nullopt;
}

static_assert([] {
  for (int i = 0; i < kCauseCount; ++i)
    if (static_cast<int>(kCauses[i].cause) != i) return false;
  return true;
}(), "kCauses must list the causes in enum order");

}  // namespace fleetsim
