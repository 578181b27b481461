// The report's per-rank utilization heat map: telemetry.csv folded into at most
// kMaxRows rows by kMaxCols time columns. Up to kMaxRankRows ranks each rank is a
// row; above, the ranks that matter (outliers) keep their own rows and the rest
// are binned into contiguous rank ranges with min/mean/max per cell.
#pragma once

#include <string>
#include <vector>

#include "sim/diagnose/record.h"

namespace fleetsim::report {

inline constexpr int kMaxCols = 240;       // time columns
inline constexpr int kMaxRankRows = 128;   // up to this many ranks: one row each
inline constexpr int kMaxBins = 128;       // above: at most this many binned rows
inline constexpr int kMaxOutliers = 16;    // ... plus at most this many outlier rows
inline constexpr int kMaxRows = kMaxBins + kMaxOutliers;
inline constexpr int kLevels = 64;         // a cell's value as one of 64 characters

// A rank the report keeps in its own row, and why.
struct Outlier {
  int rank = -1;
  std::string why;  // "culprit", "first to time out", "idle", "slowest", ...
};

struct HeatRow {
  std::string label;  // "rank 7" or "ranks 64-191"
  std::string why;    // outliers: why the row is kept ("" for plain rows and bins)
  int first = 0, last = 0;  // rank range (equal for one rank)
  int ranks = 0;            // ranks with telemetry in the row
};

// One value (gpu_util in percent, tensor_active as a fraction x100) as three
// matrices, row-major, one character per cell from kLevels ('.' = no sample).
struct HeatLayer {
  std::string name;
  std::string min, mean, max;
};

struct HeatMap {
  std::vector<HeatRow> rows;
  std::vector<double> col_end_s;  // each column's last sample time
  double t0_s = 0, t1_s = 0;      // the first and last sample time
  int ranks_sampled = 0;          // distinct ranks in telemetry.csv
  bool binned = false;
  std::vector<HeatLayer> layers;  // gpu_util, tensor_active
};

// The character for value v in [0, 100], and back (the page decodes the same way).
char level_char(double v);
extern const char kLevelAlphabet[kLevels + 1];

// Ranks that stand out: `named` first (in order, with their reasons), then ranks
// whose mean utilization after `after_s` (or over the run if negative) is far
// from the median; at most kMaxOutliers, ranks without telemetry dropped.
std::vector<Outlier> find_outliers(const std::vector<diagnose::TelemetryRow>& rows,
                                   const std::vector<Outlier>& named, double after_s);

// Builds the heat map. Deterministic: same rows, same map.
HeatMap build_heatmap(const std::vector<diagnose::TelemetryRow>& rows, const std::vector<Outlier>& outliers);

}  // namespace fleetsim::report
