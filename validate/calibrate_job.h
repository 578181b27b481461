// `fleetsim calibrate` as a function, also used by `fleetsim validate` when no
// calibration file is given: runs the MPI sweep through the launcher, fits every
// (collective, group size) with fit_alpha_beta, and writes calibration.yaml plus
// a CSV of measured against fitted times next to it (read by the notebook).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fleetsim/scenario.h"
#include "fleetsim/status.h"
#include "sim/model/calibration.h"

namespace fleetsim::validate {

struct CalibrateSpec {
  std::string backend = "mpi";      // mpi | nccl (fleetsim-nccl-runner, one GPU per rank)
  int ranks = 2;
  std::vector<OpKind> ops = {OpKind::kAllReduce, OpKind::kAllGather, OpKind::kReduceScatter,
                             OpKind::kBroadcast, OpKind::kAllToAll};
  std::vector<int> group_sizes;     // empty = every divisor of ranks from 2 up
  int64_t min_bytes = 8, max_bytes = int64_t{64} << 20;
  double factor = 2.0;
  int iters = 20;
  double budget_s = 0.25;
  std::string hostfile;
  std::string out;                  // calibration.yaml; the CSV goes to <out without .yaml>.csv
  // nccl: the machine measured, for the NCCL model's fit (a fabric preset,
  // nodes; gpus_per_node = ranks / nodes) and the NCCL constants to fit with
  // ("" = the version the runner measured with).
  std::string system = "dgx-h100";
  int nodes = 1;
  std::string nccl_version;
};

struct CalibrateResult {
  Calibration calibration;
  std::vector<CalibrationSample> samples;
  std::string measured_with;        // nccl: "2.28.9 NVIDIA H100 80GB HBM3" from the runner
  std::string csv;                  // path of the measured-vs-fitted CSV
};

// The measured-vs-fitted CSV's path for a calibration file path.
std::string calibration_csv_path(const std::string& yaml_path);

// Runs the sweep and writes both files. Errors: no runner, mpirun failure, I/O,
// (nccl) a fit that cannot be made.
Result<CalibrateResult> run_calibration(const CalibrateSpec& spec);

// What the calibration predicts for a measured sample, in seconds: the NCCL
// model with its fitted figures when there is an `nccl:` section, else the
// alpha-beta fit of (op, ranks).
double fitted_time_s(const CalibrateResult& r, const CalibrationSample& s);

// The NCCL model's fit of `samples` for `spec` (backend nccl), put into *c.
// `measured_version`: what the runner reported ("" = unknown).
std::optional<Diagnostic> fit_nccl_section(const CalibrateSpec& spec, const std::string& measured_version,
                                           const std::vector<CalibrationSample>& samples, Calibration* c);

// nccl-tests' bus-bandwidth factor: 2(n-1)/n for all-reduce, (n-1)/n for
// all-gather, reduce-scatter and all-to-all, 1 otherwise.
double busbw_factor(OpKind op, int n);

}  // namespace fleetsim::validate
