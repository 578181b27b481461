// fleetsim: the command-line entry point. Subcommands register themselves
// (commands.h); this file only builds the root app and maps errors to exit codes.
#include <unistd.h>

#include <cstdio>

#include "sim/cli/commands.h"
#include "sim/observe/progress.h"

int main(int argc, char** argv) {
  CLI::App app{"fleetsim: a discrete-event simulator of synchronous training fleets"};
  app.set_version_flag("--version", std::string("fleetsim ") + FLEETSIM_VERSION);
  app.require_subcommand(1);
  int exit_code = 0;
  fleetsim::set_progress_output(::isatty(2) != 0, false);  // --progress (per subcommand) forces it
  // --- subcommands (one line each) ---
  fleetsim::cli::register_run_command(app, &exit_code);
  fleetsim::cli::register_check_command(app, &exit_code);
  fleetsim::cli::register_diagnose_command(app, &exit_code);
  fleetsim::cli::register_report_command(app, &exit_code);
  fleetsim::cli::register_collectives_command(app, &exit_code);
  fleetsim::cli::register_drill_command(app, &exit_code);
  fleetsim::cli::register_validate_command(app, &exit_code);
  fleetsim::cli::register_calibrate_command(app, &exit_code);
  fleetsim::cli::register_sweep_command(app, &exit_code);
  fleetsim::cli::register_list_command(app, &exit_code);
  fleetsim::cli::register_export_command(app, &exit_code);
  // --- end subcommands ---
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;  // usage errors are bad input
  }
  return exit_code;
}
