// `fleetsim export torch SCENARIO [-o FILE] [--set KEY=VALUE]...`: the scenario as
// one standalone PyTorch script for torchrun (sim/export/torch_export.h). Bad
// input, or a fault with no real form, prints one FILE:LINE:COL line each and
// exits 2, writing nothing.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fleetsim/file_read.h"
#include "sim/cli/commands.h"
#include "sim/export/torch_export.h"
#include "sim/run/run.h"

namespace fleetsim::cli {
namespace {

struct ExportOptions {
  std::string scenario, out, backend = "auto";
  double time_scale = 1.0, bytes_scale = 1.0;
  std::vector<std::string> sets;
};

int fail(const std::vector<Diagnostic>& errors) {
  for (const Diagnostic& d : errors) std::fprintf(stderr, "%s\n", d.to_string().c_str());
  return 2;
}

int run_export_torch(const ExportOptions& o) {
  auto plan = load_plan(o.scenario, o.sets);
  if (!plan.ok()) return fail(plan.errors());
  exporter::TorchExportOptions eo;
  eo.source = o.scenario;
  eo.script_name = o.out.empty() || o.out == "-" ? std::filesystem::path(o.scenario).stem().string() + ".py"
                                                 : std::filesystem::path(o.out).filename().string();
  eo.backend = o.backend;
  eo.time_scale = o.time_scale;
  eo.bytes_scale = o.bytes_scale;
  auto script = exporter::export_torch(*plan, eo);
  if (!script.ok()) return fail(script.errors());
  if (o.out.empty() || o.out == "-") {
    std::fwrite(script->data(), 1, script->size(), stdout);
    return 0;
  }
  if (auto e = write_file_whole(o.out, *script, "exported script")) return fail({*e});
  return 0;
}

}  // namespace

void register_export_command(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("export", "Write a scenario as a program of a real framework");
  cmd->require_subcommand(1);
  auto o = std::make_shared<ExportOptions>();
  CLI::App* torch = cmd->add_subcommand(
      "torch", "A standalone PyTorch script that runs the scenario under torchrun (NCCL on GPUs, gloo on CPUs)");
  torch->add_option("scenario", o->scenario, "Scenario YAML file")->required();
  torch->add_option("-o,--out", o->out, "Write the script here (default: stdout)");
  torch->add_option("--set", o->sets, "Override a scenario key: KEY=VALUE; repeatable");
  torch->add_option("--backend", o->backend, "The script's default backend: auto (nccl with CUDA, else gloo), nccl, gloo")
      ->check(CLI::IsMember({"auto", "nccl", "gloo"}));
  torch->add_option("--time-scale", o->time_scale, "The script's default --time-scale (compute and cpu times x this)")
      ->check(CLI::PositiveNumber);
  torch->add_option("--bytes-scale", o->bytes_scale, "The script's default --bytes-scale (collective bytes x this)")
      ->check(CLI::PositiveNumber);
  torch->callback([o, exit_code] { *exit_code = run_export_torch(*o); });
}

}  // namespace fleetsim::cli
