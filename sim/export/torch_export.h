// `fleetsim export torch`: a scenario as one standalone, readable PyTorch script
// that torchrun runs (NCCL on GPUs, gloo on CPUs): the scenario's groups built
// as Megatron builds them, each step's compute as timed work, its collectives
// with their sizes, `when` blocks as Python `if`s, and every fault as the code a
// real bug or failure would be. A fault with no real form fails the export.
#pragma once

#include <optional>
#include <string>

#include "fleetsim/plan.h"
#include "fleetsim/status.h"

namespace fleetsim::exporter {

struct TorchExportOptions {
  std::string source;               // the scenario path as the user gave it (the header names it)
  std::string script_name = "repro.py";  // the script's file name, for the header's torchrun line
  std::string backend = "auto";     // the script's default --backend: auto | nccl | gloo
  double time_scale = 1.0;          // the script's default --time-scale
  double bytes_scale = 1.0;         // the script's default --bytes-scale
};

// The script for `plan` (its scenario, as loaded and with --set applied).
// Errors: one Diagnostic per fault with no real form (at the fault).
Result<std::string> export_torch(const Plan& plan, const TorchExportOptions& options);

// The fixed Python of every export (torch_runtime.cc): helpers before the
// scenario's own code, and main() after it.
const char* torch_runtime_prelude();
const char* torch_runtime_main();

}  // namespace fleetsim::exporter
