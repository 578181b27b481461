// `fleetsim calibrate --from-nccl-tests FILE...` as a function: reads nccl-tests
// logs (sim/io/nccl_tests_log.h), describes the measured machine from their
// header lines (GPU -> fabric preset, hosts -> nodes, NCCL release -> constants),
// fits the NCCL model's fabric figures and per-collective offsets to the measured
// times (fit_nccl, sim/model/calibration.h) and reports, per size, the measured,
// modelled-before and calibrated busbw with the fit error and a leave-one-size-out
// error. This is how a GPU box is calibrated without fleetsim on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fleetsim/status.h"
#include "sim/io/nccl_tests_log.h"
#include "sim/model/calibration.h"

namespace fleetsim::validate {

struct LogCalibrateSpec {
  std::vector<std::string> files;
  std::string system;        // fabric preset; "" = the one the GPU model names
  std::string nccl_version;  // NCCL constants; "" = the logged release's (the nearest supported)
  std::string op;            // collective of tables whose log names none ("" = refuse them)
  int ranks = 0;             // ranks of tables without `# Rank` lines (0 = refuse them)
  int nodes = 0;             // nodes of the measured machine (0 = distinct hosts of the widest table)
  // Which of a row's two times to fit: "min" (the faster: a one-off hiccup in
  // either column drops out), "out-of-place" or "in-place".
  std::string times = "min";
  bool leave_one_out = true;
};

// One measured size and what the model made of it (times in us; busbw in GB/s).
struct SizeFit {
  OpKind op = OpKind::kAllReduce;
  int ranks = 0;
  int64_t bytes = 0;
  std::string where;         // "FILE:LINE" of the row
  double measured_us = 0, before_us = 0, fitted_us = 0;
  std::optional<double> loo_us;  // the fit without this size's rows, predicting them
  double busbw(double us) const;  // nccl-tests' busbw for a time of this size
};

struct LogCalibrateResult {
  std::vector<NcclTestsTable> tables;  // the tables fitted
  std::vector<std::string> notes;      // tables left out, the release's constants, ...
  std::string gpu;                     // device name of the logs
  std::string measured_version;        // NCCL release in the logs ("" = not printed)
  std::vector<std::string> hosts;      // of the widest table
  nccl::Fabric fabric;                 // the measured machine before the fit
  NcclOptions options;                 // the NCCL constants fitted with
  Calibration calibration;             // alpha-beta fits and the `nccl:` section
  std::vector<SizeFit> sizes;
};

// Errors (nothing is written by this function): unreadable or bad logs
// (located), tables naming no collective or no ranks without --op/--ranks,
// logs of different GPUs, a GPU that matches no preset without --system, a
// fit that cannot be made.
Result<LogCalibrateResult> calibrate_from_nccl_tests(const LogCalibrateSpec& spec);

// The fabric preset a device name belongs to ("NVIDIA H100 80GB HBM3" ->
// "dgx-h100", "NVIDIA A100-SXM4-40GB" -> "dgx-a100"), "" if none.
std::string preset_for_gpu(const std::string& gpu);

// The NCCL constants for a logged release ("2.28.9" -> "2.28.9", "2.6.4" -> the
// oldest supported, "2.40.1" -> the newest); "" for "" (not logged).
std::string constants_version_for(const std::string& release);

// Writes the per-size table (op,ranks,bytes,time_us,busbw_GBps,model_us,
// model_busbw_GBps,fit_us,fit_busbw_GBps,loso_us,loso_busbw_GBps) to `path`.
std::optional<Diagnostic> write_size_csv(const LogCalibrateResult& r, const std::string& path);

}  // namespace fleetsim::validate
