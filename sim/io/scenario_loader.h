// Loads a scenario YAML file into a validated Scenario. Every problem found is
// reported as a Diagnostic with file:line:col (1-based) and what was expected;
// loading collects up to kMaxDiagnostics of them before giving up.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/scenario.h"
#include "fleetsim/status.h"

namespace fleetsim {

inline constexpr int kMaxDiagnostics = 20;

// Loads and validates `path`. `overrides` are "KEY=VALUE" strings from
// `--set`, applied to the YAML tree before it is read: KEY is a dotted path
// ("job.steps", "fleet.nodes", "parallel.tp"; a number segment indexes a list),
// VALUE is parsed as YAML; missing mappings on the path are created. Overrides
// are validated like the file. A diagnostic about an override uses the label
// "--set KEY=VALUE" as its file, line 1, and the column within that label.
Result<Scenario> load_scenario(const std::string& path,
                               const std::vector<std::string>& overrides = {});

// The same from text in memory; `file_label` is used in diagnostics.
Result<Scenario> load_scenario_text(std::string_view yaml, const std::string& file_label,
                                    const std::vector<std::string>& overrides = {});

// Unit parsers, shared with the CLI. They return a Diagnostic whose message
// says what was expected (loc is left for the caller to fill).
//   durations: "150ms", "10min", "1.5s", "250us", "1h", "0" (units ns us ms s min h)
//   sizes: "64MiB", "4B", "1.5GiB", "100MB" (B KB KiB MB MiB GB GiB TB TiB), whole bytes
//   percentages: "1%", "25%", "0.5%"
//   bandwidths: "450GB/s", "400Gb/s" -> GB/s (10^9 bytes per second)
Result<Duration> parse_duration(std::string_view text);
Result<int64_t> parse_bytes(std::string_view text);
Result<double> parse_percent(std::string_view text);
Result<double> parse_bandwidth_GBps(std::string_view text);

}  // namespace fleetsim
