// `fleetsim drill [SCENARIO | --random] [--seed N] [--scenarios DIR]`: an on-call
// exercise over a hidden incident (see docs/drill.md). Reads commands from stdin,
// with a prompt on a terminal and the commands echoed when piped, so a scripted
// session prints a deterministic transcript. Bad input exits 2.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

#include "sim/cli/commands.h"
#include "sim/drill/drill.h"

namespace fleetsim::cli {
namespace {

struct DrillArgs {
  std::string scenario;
  bool random = false;
  uint64_t seed = 1;
  std::string scenarios = "scenarios";
};

int run_drill_command(const DrillArgs& a) {
  std::string file = a.scenario;
  if (a.random == !file.empty()) {
    std::cerr << "drill: error: give a SCENARIO file or --random, not both or neither\n";
    return 2;
  }
  if (a.random) {
    const std::vector<std::string> incidents = drill::list_incidents(a.scenarios);
    if (incidents.size() < 1) {
      std::cerr << a.scenarios << ": error: no scenario with an expect.cause other than none\n";
      return 2;
    }
    file = drill::pick_incident(incidents, a.seed);
  }
  drill::DrillOptions opt;
  opt.scenario = file;
  opt.work_dir = (std::filesystem::temp_directory_path() / ("fleetsim-drill-" + std::to_string(getpid()))).string();
  opt.prompt = isatty(STDIN_FILENO) != 0;
  opt.echo = !opt.prompt;
  Result<int> rc = drill::run_drill(opt, std::cin, std::cout);
  if (!rc) {
    for (const Diagnostic& d : rc.errors()) std::cerr << d.to_string() << "\n";
    return 2;
  }
  return *rc;
}

}  // namespace

void register_drill_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DrillArgs>();
  CLI::App* cmd = app.add_subcommand("drill", "On-call exercise: find the rank and cause of a hidden incident");
  cmd->add_option("scenario", args->scenario, "Scenario YAML file to run as the hidden incident");
  cmd->add_flag("--random", args->random, "Pick an incident from the scenario library");
  cmd->add_option("--seed", args->seed, "With --random: which incident (default 1)");
  cmd->add_option("--scenarios", args->scenarios, "Scenario library for --random (default scenarios)");
  cmd->callback([args, exit_code] { *exit_code = run_drill_command(*args); });
}

}  // namespace fleetsim::cli
