// `validate --backend torch`, the real side: export, torchrun, conversion.
#include "sim/cli/validate_torch.h"

#include <cstdio>
#include <filesystem>

#include "fleetsim/file_read.h"
#include "sim/export/torch_export.h"
#include "validate/real_record.h"
#include "validate/torch_backend.h"

namespace fs = std::filesystem;

namespace fleetsim::cli {

namespace {

// Starting torch in N processes on a loaded machine takes a while before the
// first event is written; the launcher's idle deadline allows for it.
constexpr double kStartupAllowanceS = 60;

std::string seconds_arg(Duration d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", d.to_seconds());
  return buf;
}

}  // namespace

Result<validate::LaunchResult> run_torch_real(const Plan& plan, const std::string& tmp, const std::string& python,
                                              const validate::Scaling& k, Duration grace) {
  exporter::TorchExportOptions eo;
  eo.source = plan.scenario.file;
  eo.backend = "gloo";
  auto script = exporter::export_torch(plan, eo);
  if (!script.ok()) return script.errors();
  const std::string script_path = tmp + "/repro.py";
  if (auto e = write_file_whole(script_path, *script, "exported script")) return *e;
  const std::string real = tmp + "/real";
  std::error_code ec;
  fs::create_directories(real + "/torch", ec);
  validate::LaunchSpec ls;
  ls.ranks = plan.ranks;
  ls.argv = validate::torchrun_argv(
      python, plan.ranks, fs::absolute(tmp + "/torchelastic").string(), fs::absolute(script_path).string(),
      {"--backend", "gloo", "--timeout", seconds_arg(k.timeout), "--dump-wait", seconds_arg(k.dump_wait),
       "--dump-dir", fs::absolute(real + "/torch").string(), "--events",
       fs::absolute(real + "/" + validate::kPartsDir).string()});
  ls.log_file = tmp + "/torchrun.log";
  ls.watch_dir = real + "/" + validate::kPartsDir;
  ls.watch_suffix = ".tsv";
  ls.idle_limit_s = (k.timeout + grace).to_seconds() + kStartupAllowanceS;
  const auto lr = validate::launch(ls);
  if (!lr) {
    Diagnostic d;
    d.message = "cannot start torchrun";
    return d;
  }
  validate::translate_events(plan, real);
  auto dumps = validate::convert_torch_dumps(plan, real + "/torch/json", real + "/fr");
  if (!dumps.ok()) return dumps.errors();
  return *lr;
}

}  // namespace fleetsim::cli
