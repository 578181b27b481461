// A measured collective cost model: per (op, group size) an alpha-beta fit
// T(S) = alpha + beta * S of timings taken on real processes (`fleetsim
// calibrate`), read from and written to a small YAML file. The fit and the file
// are CPU-only and MPI-free so they are unit-tested anywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/scenario.h"
#include "fleetsim/status.h"

namespace fleetsim {

// One timing: op on a group of `ranks` members moving nccl-tests' S = `bytes`
// took `time_s` from the last arrival to completion (median over iterations).
struct CalibrationSample {
  OpKind op = OpKind::kAllReduce;
  int ranks = 2;
  int64_t bytes = 0;
  double time_s = 0;
};

// T(S) = alpha_s + beta_s_per_byte * S, both >= 0.
struct AlphaBeta {
  double alpha_s = 0;
  double beta_s_per_byte = 0;

  double time_s(int64_t bytes) const { return alpha_s + beta_s_per_byte * static_cast<double>(bytes); }
};

struct CollectiveFit {
  OpKind op = OpKind::kAllReduce;
  int ranks = 2;
  AlphaBeta fit;
  double max_rel_err = 0;   // worst |fit - measured| / measured over the samples
  int64_t min_bytes = 0, max_bytes = 0;  // the sampled range
};

struct Calibration {
  std::string backend = "mpi";  // mpi | nccl
  std::string host;             // where it was measured (informational)
  int ranks = 0;                // world size of the calibration job
  std::vector<CollectiveFit> fits;

  // The fit for (op, ranks), else the same op at the nearest calibrated size.
  const CollectiveFit* find(OpKind op, int ranks) const;
};

// Least-squares alpha-beta fit with Eigen, weighted by 1/T so that every size
// counts by its relative error (8 B and 64 MiB alike). Negative coefficients are
// clamped to 0 and the other refitted. REQUIRES: samples non-empty, times > 0.
AlphaBeta fit_alpha_beta(const std::vector<CalibrationSample>& samples);

// Groups samples by (op, ranks) and fits each group.
std::vector<CollectiveFit> fit_all(const std::vector<CalibrationSample>& samples);

// Reads a calibration file. Bad input: FILE:LINE:COL diagnostics.
Result<Calibration> load_calibration(const std::string& path);

// Writes `c` as YAML to `path` (via path.tmp-<pid> and a rename). Returns a
// diagnostic on an I/O failure.
std::optional<Diagnostic> write_calibration(const Calibration& c, const std::string& path);

// A CostModel from measured fits: for a group of n members it uses the fit for
// (op, n); a size not calibrated scales the nearest one's alpha by ring steps and
// beta by ring bytes per rank. Ops never calibrated borrow allreduce's fit
// (barrier = a 4-byte allreduce, as ProcessGroupNCCL does). `fleet` is kept for
// the name only. REQUIRES: c.fits non-empty.
std::unique_ptr<CostModel> make_calibrated_model(const Calibration& c, const Fleet& fleet);

// "allreduce" -> kAllReduce for the collectives a calibration can hold.
std::optional<OpKind> collective_from_name(const std::string& name);

}  // namespace fleetsim
