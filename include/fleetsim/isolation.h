// The steps of the isolation order, once: the names `fleetsim diagnose` prints
// its sections under, the drill's hints and path, and docs/isolation-order.md's
// table (checked by tests/docs/vocabulary_test.cc) all come from this table.
#pragma once

#include <string_view>

namespace fleetsim {

enum class IsolationStep : int {
  kHangOrSlow = 1,
  kUtilization,
  kWatchdog,
  kStacks,
  kFlightRecorder,
  kNcclView,
  kReproduce,
  kHardware,
};
inline constexpr int kIsolationStepCount = 8;

struct IsolationStepSpec {
  IsolationStep step;
  const char* name;  // as diagnose, the drill and the docs name the step
};

// INVARIANT: kIsolationSteps[i].step == static_cast<IsolationStep>(i + 1).
inline constexpr IsolationStepSpec kIsolationSteps[kIsolationStepCount] = {
    {IsolationStep::kHangOrSlow, "Hang or slow?"},
    {IsolationStep::kUtilization, "Per-rank utilization"},
    {IsolationStep::kWatchdog, "Watchdog lines and pg_status"},
    {IsolationStep::kStacks, "Stacks"},
    {IsolationStep::kFlightRecorder, "Flight recorder"},
    {IsolationStep::kNcclView, "NCCL's own view"},
    {IsolationStep::kReproduce, "Reproduce"},
    {IsolationStep::kHardware, "Hardware"},
};

constexpr int isolation_step_number(IsolationStep s) { return static_cast<int>(s); }
constexpr std::string_view isolation_step_name(IsolationStep s) { return kIsolationSteps[static_cast<int>(s) - 1].name; }

}  // namespace fleetsim
