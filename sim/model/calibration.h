// A measured collective cost model: per (op, group size) an alpha-beta fit
// T(S) = alpha + beta * S of timings taken on real processes (`fleetsim
// calibrate`), read from and written to a small YAML file. The fit and the file
// are CPU-only and MPI-free so they are unit-tested anywhere.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleetsim/cost_model.h"
#include "fleetsim/scenario.h"
#include "fleetsim/status.h"
#include "sim/model/nccl_fabric.h"
#include "sim/model/nccl_model.h"

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

// The NCCL model's figures fitted to measurements on real GPUs (`fleetsim
// calibrate --backend nccl`): the fabric figures of nccl_fabric.h that the
// measurements determine (fittable_figures(): bw_intra, bw_inter, nvls_bw in
// GB/s per channel, net_latency in us) and, per collective, a latency offset
// added to the model's time (what the fabric's figures cannot express: launch
// and synchronisation costs of this machine). The model applying them starts
// from the scenario's fleet, sets the figures, and uses `version`'s constants.
struct NcclCalibration {
  std::string system = "dgx-h100";  // the preset the measured machine was described by
  int nodes = 1, gpus_per_node = 8;  // the measured machine
  std::string version = "2.30";      // NCCL release whose constants the fit used
  std::vector<std::pair<std::string, double>> figures;      // fitted fabric figures
  std::vector<std::pair<OpKind, double>> latency_offset_us; // per collective
  double max_rel_err = 0;            // worst |model - measured| / measured after the fit
  int samples = 0;

  double offset_us(OpKind op) const;
};

struct Calibration {
  std::string backend = "mpi";  // mpi | nccl
  std::string host;             // where it was measured (informational)
  int ranks = 0;                // world size of the calibration job
  std::vector<CollectiveFit> fits;
  std::optional<NcclCalibration> nccl;  // the `nccl:` section (backend nccl)

  // The fit for (op, ranks), else the same op at the nearest calibrated size.
  const CollectiveFit* find(OpKind op, int ranks) const;
};

// Least-squares alpha-beta fit with Eigen, weighted by 1/T so that every size
// counts by its relative error (8 B and 64 MiB alike). Negative coefficients are
// clamped to 0 and the other refitted. REQUIRES: samples non-empty, times > 0.
AlphaBeta fit_alpha_beta(const std::vector<CalibrationSample>& samples);

// Groups samples by (op, ranks) and fits each group.
std::vector<CollectiveFit> fit_all(const std::vector<CalibrationSample>& samples);

// The group shape a sweep group of `ranks` consecutive ranks has on machines
// of `gpus_per_node` GPUs.
GroupShape sweep_group_shape(int ranks, int gpus_per_node);

// A fabric figure fit_nccl may set: the one table of fitted terms, read by the
// fit, the calibration file's reader and the reports. A term of the NCCL model
// that a `set_fabric_field` key sets becomes fittable with one row here.
struct FittableFigure {
  const char* key;    // the set_fabric_field key and the file's name for it
  const char* unit;   // "GB/s per channel", "us"
  bool multi_node;    // fitted only when the measured groups span nodes
  bool log_scale;     // searched over [v/16, 16 v] of its value v before the fit, else over [lo, hi]
  double lo, hi;
  // Its value before the fit, given the graphs of a one-node group and of the
  // widest measured group; <= 0 on a log scale: not applicable (no NVLS, ...).
  double (*before)(const nccl::Fabric& f, const nccl::Graphs& one_node, const nccl::Graphs& widest);
};

// bw_intra, bw_inter, nvls_bw (GB/s per channel), net_latency (us), in the
// order forward selection tries them.
const std::vector<FittableFigure>& fittable_figures();
const FittableFigure* find_fittable_figure(std::string_view key);

// A figure's value before the fit on `fabric`, measured with groups of up to
// `widest_ranks` consecutive ranks.
double figure_before_fit(const FittableFigure& fig, const nccl::Fabric& fabric, int widest_ranks);

// Fits the NCCL model's figures to `samples` (group sizes >= 2) measured on
// `fabric` (whose nodes and gpus_per_node describe the measured machine):
// coordinate descent over the figures the samples are sensitive to (a log
// grid, then golden-section refinement), with each collective's latency offset
// solved in closed form (least squares on relative error). Errors: no usable
// samples, bad options.
Result<NcclCalibration> fit_nccl(const std::vector<CalibrationSample>& samples, const nccl::Fabric& fabric,
                                 const nccl::Options& options);

// The fabric with `c`'s fitted figures set on it.
nccl::Fabric apply_nccl_figures(const NcclCalibration& c, nccl::Fabric fabric);

// The time the fitted NCCL model predicts for one sample, in seconds.
double nccl_calibrated_time_s(const NcclCalibration& c, const nccl::Model& fitted, OpKind op, int64_t bytes,
                              int ranks);

// Reads a calibration file. Bad input: FILE:LINE:COL diagnostics.
Result<Calibration> load_calibration(const std::string& path);

// Writes `c` as YAML to `path` (via path.tmp-<pid> and a rename). Returns a
// diagnostic on an I/O failure.
std::optional<Diagnostic> write_calibration(const Calibration& c, const std::string& path);

// A CostModel from measured fits. With an `nccl:` section: NCCL's model on
// the scenario's fleet with the fitted figures and latency offsets. Otherwise,
// for a group of n members it uses the fit for
// (op, n); a size not calibrated scales the nearest one's alpha by ring steps and
// beta by ring bytes per rank. Ops never calibrated borrow allreduce's fit
// (barrier = a 4-byte allreduce, as ProcessGroupNCCL does). `fleet` is the
// NCCL model's fabric (without an `nccl:` section it is not used); `algo` and
// `proto` restrict the NCCL model's choices as the scenario's job.nccl does.
// REQUIRES: c.fits non-empty.
std::unique_ptr<CostModel> make_calibrated_model(const Calibration& c, const Fleet& fleet,
                                                 const std::string& algo = "", const std::string& proto = "");

// "allreduce" -> kAllReduce for the collectives a calibration can hold.
std::optional<OpKind> collective_from_name(const std::string& name);

}  // namespace fleetsim
