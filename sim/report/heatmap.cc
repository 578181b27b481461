// Folds telemetry.csv into the report's heat map: time columns, rank rows or
// binned rank ranges (min/mean/max per cell), and the outliers kept as their
// own rows. Two passes over the rows; memory bounded by rows x columns.
#include "sim/report/heatmap.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fleetsim/status.h"

namespace fleetsim::report {

const char kLevelAlphabet[kLevels + 1] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char level_char(double v) {
  const double c = std::isnan(v) ? 0.0 : std::clamp(v, 0.0, 100.0);
  return kLevelAlphabet[static_cast<int>(std::lround(c / 100.0 * (kLevels - 1)))];
}

namespace {

using diagnose::TelemetryRow;

constexpr double kOutlierGap = 40.0;  // percentage points from the median's mean utilization

std::vector<int> distinct_ranks(const std::vector<TelemetryRow>& rows) {
  std::vector<int> r;
  r.reserve(rows.size());
  for (const TelemetryRow& t : rows) r.push_back(t.rank);
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return r;
}

std::vector<double> distinct_times(const std::vector<TelemetryRow>& rows) {
  std::vector<double> t;
  for (const TelemetryRow& x : rows)
    if (t.empty() || t.back() != x.time_s) t.push_back(x.time_s);
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  return t;
}

size_t index_of(const std::vector<int>& sorted, int v) {
  return static_cast<size_t>(std::lower_bound(sorted.begin(), sorted.end(), v) - sorted.begin());
}

std::string range_label(int first, int last) {
  return first == last ? "rank " + std::to_string(first)
                       : "ranks " + std::to_string(first) + "-" + std::to_string(last);
}

struct Cell {
  double sum = 0, min = std::numeric_limits<double>::infinity(), max = -1;
  int n = 0;
  void add(double v) { sum += v, min = std::min(min, v), max = std::max(max, v), ++n; }
};

// Row of each rank (by index into `ranks`); fills map->rows and map->binned.
std::vector<int> assign_rows(const std::vector<int>& ranks, const std::vector<Outlier>& outliers, HeatMap* map) {
  std::vector<int> row(ranks.size(), -1);
  if (ranks.size() <= static_cast<size_t>(kMaxRankRows)) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      row[i] = static_cast<int>(i);
      map->rows.push_back({range_label(ranks[i], ranks[i]), "", ranks[i], ranks[i], 1});
    }
    for (const Outlier& o : outliers) {
      const size_t i = index_of(ranks, o.rank);
      if (i < ranks.size() && ranks[i] == o.rank) {
        std::string& why = map->rows[i].why;
        why += (why.empty() ? "" : ", ") + o.why;
      }
    }
    return row;
  }
  map->binned = true;
  for (const Outlier& o : outliers) {
    const size_t i = index_of(ranks, o.rank);
    if (i >= ranks.size() || ranks[i] != o.rank || row[i] >= 0) continue;
    row[i] = static_cast<int>(map->rows.size());
    map->rows.push_back({range_label(o.rank, o.rank), o.why, o.rank, o.rank, 1});
  }
  std::vector<size_t> rest;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (row[i] < 0) rest.push_back(i);
  const size_t bins = std::min<size_t>(rest.size(), kMaxBins);
  for (size_t b = 0; b < bins; ++b) {
    const size_t lo = b * rest.size() / bins, hi = (b + 1) * rest.size() / bins;
    const int r = static_cast<int>(map->rows.size());
    for (size_t k = lo; k < hi; ++k) row[rest[k]] = r;
    map->rows.push_back({range_label(ranks[rest[lo]], ranks[rest[hi - 1]]), "", ranks[rest[lo]],
                         ranks[rest[hi - 1]], static_cast<int>(hi - lo)});
  }
  return row;
}

HeatLayer encode(const std::string& name, const std::vector<Cell>& cells) {
  HeatLayer l{name, "", "", ""};
  for (const Cell& c : cells) {
    l.min += c.n ? level_char(c.min) : '.';
    l.mean += c.n ? level_char(c.sum / c.n) : '.';
    l.max += c.n ? level_char(c.max) : '.';
  }
  return l;
}

}  // namespace

std::vector<Outlier> find_outliers(const std::vector<TelemetryRow>& rows, const std::vector<Outlier>& named,
                                   double after_s) {
  const std::vector<int> ranks = distinct_ranks(rows);
  auto has = [&](int r) { const size_t i = index_of(ranks, r); return i < ranks.size() && ranks[i] == r; };
  std::vector<Outlier> out;
  auto listed = [&](int r) { return std::any_of(out.begin(), out.end(), [r](const Outlier& o) { return o.rank == r; }); };
  for (const Outlier& o : named) {
    if (!has(o.rank) || out.size() >= static_cast<size_t>(kMaxOutliers)) continue;
    if (listed(o.rank)) {
      for (Outlier& x : out) if (x.rank == o.rank) x.why += ", " + o.why;
    } else {
      out.push_back(o);
    }
  }
  std::vector<double> sum(ranks.size(), 0.0);
  std::vector<int> n(ranks.size(), 0);
  for (const TelemetryRow& t : rows) {
    if (after_s >= 0 && t.time_s <= after_s) continue;
    const size_t i = index_of(ranks, t.rank);
    sum[i] += t.gpu_util, ++n[i];
  }
  std::vector<std::pair<double, size_t>> means;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (n[i] > 0) means.emplace_back(sum[i] / n[i], i);
  if (means.empty()) return out;
  std::vector<std::pair<double, size_t>> sorted = means;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(sorted.size() / 2), sorted.end());
  const double median = sorted[sorted.size() / 2].first;
  std::vector<std::pair<double, size_t>> far;
  for (const auto& [m, i] : means)
    if (std::abs(m - median) > kOutlierGap) far.emplace_back(-std::abs(m - median), i);
  std::sort(far.begin(), far.end());
  for (const auto& [gap, i] : far) {
    if (out.size() >= static_cast<size_t>(kMaxOutliers)) break;
    if (listed(ranks[i])) continue;
    const double m = sum[i] / n[i];
    char why[96];
    std::snprintf(why, sizeof why, "%s: %.0f%% GPU utilization vs the median %.0f%%",
                  m < median ? "idle" : "busy", m, median);
    out.push_back({ranks[i], why});
  }
  return out;
}

HeatMap build_heatmap(const std::vector<TelemetryRow>& rows, const std::vector<Outlier>& outliers) {
  HeatMap map;
  if (rows.empty()) return map;
  const std::vector<int> ranks = distinct_ranks(rows);
  const std::vector<double> times = distinct_times(rows);
  map.ranks_sampled = static_cast<int>(ranks.size());
  map.t0_s = times.front(), map.t1_s = times.back();
  const size_t cols = std::min<size_t>(times.size(), kMaxCols);
  auto col_of = [&](double t) {
    const auto i = static_cast<size_t>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
    return i * cols / times.size();
  };
  map.col_end_s.assign(cols, 0.0);
  for (size_t i = 0; i < times.size(); ++i) map.col_end_s[i * cols / times.size()] = times[i];
  const std::vector<int> row = assign_rows(ranks, outliers, &map);
  std::vector<Cell> util(map.rows.size() * cols), tensor(map.rows.size() * cols);
  for (const TelemetryRow& t : rows) {
    const int r = row[index_of(ranks, t.rank)];
    FLEETSIM_CHECK(r >= 0);
    const size_t cell = static_cast<size_t>(r) * cols + col_of(t.time_s);
    util[cell].add(t.gpu_util);
    tensor[cell].add(t.tensor_active * 100.0);
  }
  map.layers.push_back(encode("GPU utilization (%)", util));
  map.layers.push_back(encode("tensor activity (%)", tensor));
  return map;
}

}  // namespace fleetsim::report
