// `fleetsim list [faults|causes|models|backends|flight-recorder|outputs]`: prints the project's
// vocabularies from the tables that the loader and the code read, so the help
// can never disagree with what a scenario may say.
#include <cstdio>
#include <string>

#include "fleetsim/cause.h"
#include "fleetsim/fault.h"
#include "fleetsim/record.h"
#include "fleetsim/scenario.h"
#include "sim/cli/commands.h"

namespace fleetsim::cli {

namespace {

void print_faults() {
  std::printf("fault kinds (scenario `faults:`; keys in braces):\n");
  for (const FaultSpec& f : kFaultSpecs) {
    std::string keys;
    for (const char* k : f.keys)
      if (k) keys += (keys.empty() ? "" : ", ") + std::string(k);
    std::printf("  %-13s {%s}\n  %-13s %s\n", f.name, keys.c_str(), "", f.what);
  }
}

void print_causes() {
  std::printf("causes (what `fleetsim diagnose` names; scenario `expect.cause`):\n");
  for (const CauseSpec& c : kCauses) std::printf("  %-22s %s\n", c.name, c.meaning);
}

void print_models() {
  std::printf("collective models (scenario `job.collective_model`):\n");
  for (const CollectiveModelSpec& m : kCollectiveModels) std::printf("  %-11s %s\n", m.name, m.what);
}

void print_backends() {
  std::printf("backends (scenario `job.backend`):\n");
  for (const CommBackendSpec& b : kCommBackends) std::printf("  %-6s %s\n", b.name, b.what);
}

void print_flight_recorder() {
  std::printf("flight-recorder settings (scenario `job.flight_recorder: {KEY: VALUE}`; the first value is the default):\n");
  for (const FrSettingSpec& s : kFrSettings) {
    const std::string values = std::string(s.values[0]) + ", " + s.values[1];
    std::printf("  %-12s %-13s %s\n", s.key, values.c_str(), s.what);
  }
}

void print_outputs() {
  std::printf("outputs (RunRecord files; `fleetsim run --outputs`):\n");
  for (const OutputSpec& o : kOutputs)
    std::printf("  %-10s %-14s %s; default: %s%s\n", o.cli_name, o.file_name, o.what, o.bounded_default,
                o.lockstep ? "" : " (event executor only)");
}

}  // namespace

void register_list_command(CLI::App& app, int* exit_code) {
  auto what = std::make_shared<std::string>("all");
  CLI::App* cmd = app.add_subcommand("list", "List fault kinds, diagnose causes, collective models, backends, "
                                    "flight-recorder settings or outputs");
  cmd->add_option("what", *what, "faults, causes, models, backends, flight-recorder, outputs or all (default)")
      ->check(CLI::IsMember({"faults", "causes", "models", "backends", "flight-recorder", "outputs", "all"}));
  cmd->callback([what, exit_code] {
    const bool all = *what == "all";
    bool first = true;
    auto section = [&](const char* name, void (*print)()) {
      if (!all && *what != name) return;
      if (!first) std::printf("\n");
      first = false;
      print();
    };
    section("faults", print_faults);
    section("causes", print_causes);
    section("models", print_models);
    section("backends", print_backends);
    section("flight-recorder", print_flight_recorder);
    section("outputs", print_outputs);
    *exit_code = 0;
  });
}

}  // namespace fleetsim::cli
