// Slow-run patterns in steps.csv that a late-versus-early comparison misses: a
// slow window in the middle of a run, and slow steps whose slowest rank moves.
// Thresholds are relative to the run's own step times, so they hold for any
// step length; they are documented in docs/diagnose.md.
#include <algorithm>
#include <cmath>
#include <map>

#include "sim/diagnose/signals.h"

namespace fleetsim::diagnose {
namespace {

constexpr double kWindowExcess = 1.05;  // a window's rolling median >= 5% above baseline
constexpr double kSpikeExcess = 1.25;   // a spike: >= 25% above the fast tenth
constexpr double kRotatingShare = 0.10; // spikes cost >= 10% of the run

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<size_t>(std::floor(q * static_cast<double>(v.size() - 1)));
  return v[i];
}

double median(std::vector<double> v) { return quantile(std::move(v), 0.5); }

}  // namespace

std::optional<SlowWindow> find_slow_window(const std::vector<StepRow>& steps) {
  const size_t n = steps.size();
  if (n < 30) return std::nullopt;
  const size_t half = std::clamp<size_t>(n / 30, 2, 12);  // rolling window 2*half+1 steps
  std::vector<double> rolling(n);
  for (size_t i = 0; i < n; ++i) {
    const size_t lo = i < half ? 0 : i - half;
    const size_t hi = std::min(n - 1, i + half);
    std::vector<double> w;
    for (size_t j = lo; j <= hi; ++j) w.push_back(steps[j].duration_s);
    rolling[i] = median(std::move(w));
  }
  const double baseline = quantile(rolling, 0.2);
  if (baseline <= 0) return std::nullopt;
  // The longest run of steps whose rolling median is clearly above the baseline.
  size_t best_lo = 0, best_len = 0;
  for (size_t i = 0; i < n;) {
    if (rolling[i] <= baseline * kWindowExcess) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && rolling[j] > baseline * kWindowExcess) ++j;
    if (j - i > best_len) {
      best_lo = i;
      best_len = j - i;
    }
    i = j;
  }
  // Long enough not to be a burst of spikes, short enough that a baseline exists.
  if (best_len < std::max<size_t>(2 * half + 1, n / 20) || best_len > n * 4 / 5) return std::nullopt;
  // The rolling median blurs the edges by up to `half` steps: trim to the first
  // and last steps that are slow themselves.
  while (best_len > 1 && steps[best_lo].duration_s <= baseline * kWindowExcess) {
    ++best_lo;
    --best_len;
  }
  while (best_len > 1 && steps[best_lo + best_len - 1].duration_s <= baseline * kWindowExcess) --best_len;
  SlowWindow w;
  w.first_step = steps[best_lo].step;
  w.last_step = steps[best_lo + best_len - 1].step;
  w.start_s = steps[best_lo].start_s;
  w.end_s = steps[best_lo + best_len - 1].end_s;
  std::vector<double> inside, outside;
  for (size_t i = 0; i < n; ++i) {
    (i >= best_lo && i < best_lo + best_len ? inside : outside).push_back(steps[i].duration_s);
  }
  w.median_s = median(inside);
  w.baseline_s = median(outside);
  w.to_the_end = best_lo + best_len == n;
  if (w.median_s < w.baseline_s * kWindowExcess) return std::nullopt;
  return w;
}

WindowCulprits window_culprits(const SlowWindow& w, const std::vector<StepRow>& steps,
                               const std::vector<TelemetryRow>& telemetry, int ranks) {
  WindowCulprits out;
  // Telemetry: each rank's mean tensor activity inside the window against outside it.
  std::map<int, std::pair<double, int>> in, out_of;
  for (const TelemetryRow& r : telemetry) {
    auto& acc = (r.time_s >= w.start_s && r.time_s <= w.end_s ? in : out_of)[r.rank];
    acc.first += r.tensor_active;
    ++acc.second;
  }
  std::map<int, double> ratio;
  for (const auto& [rank, acc] : in) {
    auto o = out_of.find(rank);
    if (acc.second < 3 || o == out_of.end() || o->second.second < 3 || o->second.first <= 0) continue;
    ratio[rank] = (acc.first / acc.second) / (o->second.first / o->second.second);
  }
  if (ratio.size() >= 2) {
    std::vector<double> rs;
    for (const auto& [rank, v] : ratio) rs.push_back(v);
    const double med = median(rs);
    const double top = *std::max_element(rs.begin(), rs.end());
    if (top >= med * 1.05) {
      const double cut = med + (top - med) / 2;  // halfway: busy ranks cluster near the top
      for (const auto& [rank, v] : ratio) {
        if (v >= cut) out.ranks.push_back(rank);
      }
      if (out.ranks.size() * 4 <= ratio.size()) {
        out.basis = "telemetry";
        return out;
      }
      out.ranks.clear();
    }
  }
  // steps.csv: ranks that were slowest in the window far more often than chance.
  std::map<int, int> last;
  int in_window = 0;
  for (const StepRow& s : steps) {
    if (s.step < w.first_step || s.step > w.last_step || s.slowest_rank < 0) continue;
    ++last[s.slowest_rank];
    ++in_window;
  }
  const double chance = static_cast<double>(in_window) / std::max(1, ranks);
  int covered = 0;
  for (const auto& [rank, n] : last) {
    if (n >= 3 && n >= 3 * chance) {
      out.ranks.push_back(rank);
      covered += n;
    }
  }
  if (out.ranks.empty() || covered * 2 < in_window) {
    out.ranks.clear();
    return out;
  }
  out.basis = "steps";
  return out;
}

std::optional<RotatingStalls> find_rotating_stalls(const std::vector<StepRow>& steps) {
  const size_t n = steps.size();
  if (n < 20) return std::nullopt;
  std::vector<double> d;
  double total = 0;
  for (const StepRow& s : steps) {
    d.push_back(s.duration_s);
    total += s.duration_s;
  }
  RotatingStalls r;
  r.steps = static_cast<int>(n);
  r.fast_s = quantile(d, 0.1);
  if (r.fast_s <= 0 || total <= 0) return std::nullopt;
  std::map<int, int> last;
  std::vector<double> spike_times;
  double excess = 0;
  for (const StepRow& s : steps) {
    if (s.duration_s < r.fast_s * kSpikeExcess) continue;
    ++r.spikes;
    spike_times.push_back(s.duration_s);
    excess += s.duration_s - r.fast_s;
    if (s.slowest_rank >= 0) ++last[s.slowest_rank];
  }
  r.distinct_ranks = static_cast<int>(last.size());
  for (const auto& [rank, k] : last) r.max_per_rank = std::max(r.max_per_rank, k);
  r.spike_median_s = median(spike_times);
  r.excess_share = excess / total;
  const bool enough = r.spikes >= std::max<int>(5, r.steps / 10) && r.excess_share >= kRotatingShare;
  const bool moving = r.distinct_ranks >= std::max(4, r.spikes / 4) && r.max_per_rank * 4 <= r.spikes;
  if (!enough || !moving) return std::nullopt;
  return r;
}

}  // namespace fleetsim::diagnose
