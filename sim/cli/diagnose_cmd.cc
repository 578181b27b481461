// `fleetsim diagnose DIR [--json]`: walks the isolation order over a RunRecord or a
// folder of PyTorch flight-recorder dumps and names the culprit. Bad input (missing
// folder, malformed JSON) prints one FILE:LINE:COL line and exits 2.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "sim/cli/commands.h"
#include "sim/diagnose/diagnose.h"

namespace fleetsim::cli {
namespace {

struct DiagnoseOptions {
  std::string dir;
  bool json = false;
};

int run_diagnose(const DiagnoseOptions& opt) {
  Result<diagnose::Diagnosis> d = diagnose::diagnose_dir(opt.dir);
  if (!d) {
    std::cerr << d.errors().front().to_string() << "\n";
    return 2;
  }
  std::cout << (opt.json ? diagnose::format_json(*d) + "\n" : diagnose::format_human(*d));
  return 0;
}

}  // namespace

void register_diagnose_command(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<DiagnoseOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diagnose", "Walk the isolation order over a run folder or a cluster's evidence and name the culprit");
  add_evidence_dir_arg(cmd, &opt->dir);
  cmd->add_flag("--json", opt->json, "print one JSON object instead of the transcript");
  add_progress_flag(cmd);
  cmd->callback([opt, exit_code] { *exit_code = run_diagnose(*opt); });
}

}  // namespace fleetsim::cli
