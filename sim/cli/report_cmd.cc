// `fleetsim report DIR [-o FILE]`: writes one self-contained HTML page for a run
// folder (default DIR/report.html) and prints where it went and its size. Bad
// input (what diagnose refuses, an unwritable FILE) prints one line and exits 2.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include "sim/cli/commands.h"
#include "sim/report/report.h"

namespace fleetsim::cli {
namespace {

struct ReportOptions {
  std::string dir;
  std::string out;
};

// Writes `text` to `path` whole, checking the write and the close.
std::string write_whole(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return std::strerror(errno);
  const size_t n = std::fwrite(text.data(), 1, text.size(), f);
  const bool bad = n != text.size() || std::ferror(f) != 0;
  const int saved = errno;
  if (std::fclose(f) != 0 || bad) return std::strerror(bad ? saved : errno);
  return "";
}

int run_report(const ReportOptions& opt) {
  Result<std::string> page = report::render_report(opt.dir);
  if (!page) {
    std::cerr << page.errors().front().to_string() << "\n";
    return 2;
  }
  std::string dir = opt.dir;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  const std::string out = opt.out.empty() ? dir + "/report.html" : opt.out;
  const std::string why = write_whole(out, *page);
  if (!why.empty()) {
    std::cerr << out << ": error: cannot write the report: " << why << "\n";
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
  cmd->add_option("DIR", opt->dir, "RunRecord folder (or a folder of PyTorch FR JSON dumps)")->required();
  cmd->add_option("-o,--out", opt->out, "the page to write (default DIR/report.html)");
  cmd->callback([opt, exit_code] { *exit_code = run_report(*opt); });
}

}  // namespace fleetsim::cli
