// `fleetsim report DIR [-o FILE]`: writes one self-contained HTML page for a run
// folder (default DIR/report.html) and prints where it went and its size. Bad
// input (what diagnose refuses, an unwritable FILE) prints one line and exits 2.
#include <iostream>
#include <memory>
#include <string>

#include "fleetsim/file_read.h"
#include "sim/cli/commands.h"
#include "sim/report/report.h"

namespace fleetsim::cli {
namespace {

struct ReportOptions {
  std::string dir;
  std::string out;
};

int run_report(const ReportOptions& opt) {
  Result<std::string> page = report::render_report(opt.dir);
  if (!page) {
    std::cerr << page.errors().front().to_string() << "\n";
    return 2;
  }
  std::string dir = opt.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string out = opt.out.empty() ? dir + "/report.html" : opt.out;
  if (auto e = write_file_whole(out, *page, "report page")) {
    std::cerr << e->to_string() << "\n";
    return 2;
  }
  std::cout << "report     " << out << " (" << page->size() << " bytes)\n";
  return 0;
}

}  // namespace

void register_report_command(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write one self-contained HTML page for a run folder: heat map, step times, FR alignment, diagnosis");
  add_evidence_dir_arg(cmd, &opt->dir);
  cmd->add_option("-o,--out", opt->out, "the page to write (default DIR/report.html)");
  cmd->callback([opt, exit_code] { *exit_code = run_report(*opt); });
}

}  // namespace fleetsim::cli
