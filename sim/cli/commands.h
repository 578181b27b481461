// Each fleetsim subcommand lives in its own <name>_cmd.cc and registers itself on
// the root CLI11 app. Its callback stores the process exit code in *exit_code:
// 0 = it ran (whatever the simulated job did), 2 = bad input, 1 = internal failure.
#pragma once

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <string>

#include "sim/observe/progress.h"

namespace fleetsim::cli {

void register_run_command(CLI::App& app, int* exit_code);
void register_check_command(CLI::App& app, int* exit_code);
void register_collectives_command(CLI::App& app, int* exit_code);
void register_diagnose_command(CLI::App& app, int* exit_code);
void register_report_command(CLI::App& app, int* exit_code);
void register_sweep_command(CLI::App& app, int* exit_code);
void register_drill_command(CLI::App& app, int* exit_code);
void register_validate_command(CLI::App& app, int* exit_code);
void register_calibrate_command(CLI::App& app, int* exit_code);
void register_list_command(CLI::App& app, int* exit_code);
void register_export_command(CLI::App& app, int* exit_code);

// The DIR argument of the commands that read evidence (diagnose, report): what it may hold.
inline void add_evidence_dir_arg(CLI::App* cmd, std::string* dir) {
  cmd->add_option("DIR", *dir,
                  "A RunRecord folder, or a folder of a cluster's evidence: PyTorch flight-recorder dumps "
                  "(pickle or JSON, any file names, a folder per host) and torchrun logs")
      ->required();
}

// --progress: progress lines on stderr even when it is not a terminal (plain
// lines every ~5 s); on a terminal they are on anyway, redrawn in place.
inline void add_progress_flag(CLI::App* cmd) {
  cmd->add_flag_function("--progress", [](int64_t) { set_progress_output(::isatty(2) != 0, true); },
                         "Progress on stderr when it is not a terminal too (plain lines every ~5 s)");
}

}  // namespace fleetsim::cli
