// Numerical integration of the expected maximum. F(x)^N is evaluated as
// exp(N * log1p(-(1 - F))) from the upper tail, so that 1 - F^N keeps its
// precision where 1 - F is below machine epsilon; the integral is Simpson's
// rule on a fine grid between quantiles where F^N is ~0 and 1 - F^N is ~0.
#include "sim/sweep/order_stats.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace fleetsim {

namespace {

constexpr double kEulerGamma = 0.5772156649015329;
constexpr int kIntervals = 24000;  // even

// Upper tail P(Z > z) of a standard normal.
double normal_ccdf(double z) { return 0.5 * std::erfc(z / std::numbers::sqrt2); }

// Regularized lower incomplete gamma P(a, x) and upper Q(a, x): the series for
// x < a + 1, the continued fraction (modified Lentz) otherwise.
void incomplete_gamma(double a, double x, double* p, double* q) {
  if (x <= 0) { *p = 0; *q = 1; return; }
  if (x < a + 1) {
    double term = 1.0 / a, sum = term;
    for (int n = 1; n < 100000 && std::fabs(term) > std::fabs(sum) * 1e-17; ++n) {
      term *= x / (a + n);
      sum += term;
    }
    *p = std::min(1.0, sum * std::exp(a * std::log(x) - x - std::lgamma(a)));
    *q = 1.0 - *p;
    return;
  }
  constexpr double kTiny = 1e-300;
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-16) break;
  }
  *q = std::min(1.0, std::exp(a * std::log(x) - x - std::lgamma(a)) * h);
  *p = 1.0 - *q;
}

// F(x) and 1 - F(x) of X.
void cdf_pair(const Jitter& j, double x, double* f, double* g) {
  switch (j.dist) {
    case JitterDist::kNormal:
      *g = normal_ccdf((x - 1) / j.cv);
      *f = normal_ccdf(-(x - 1) / j.cv);
      return;
    case JitterDist::kLognormal: {
      const double s = std::sqrt(std::log1p(j.cv * j.cv)), mu = -0.5 * s * s;
      const double z = x > 0 ? (std::log(x) - mu) / s : -INFINITY;
      *g = normal_ccdf(z);
      *f = normal_ccdf(-z);
      return;
    }
    case JitterDist::kGamma: {
      const double k = 1 / (j.cv * j.cv);
      incomplete_gamma(k, k * x, f, g);
      return;
    }
    case JitterDist::kEmpirical: {
      const std::vector<double>& v = j.samples;
      const auto m = static_cast<double>(v.size() - 1);
      if (x <= v.front()) { *f = 0; *g = 1; return; }
      if (x >= v.back()) { *f = 1; *g = 0; return; }
      const size_t i = static_cast<size_t>(std::upper_bound(v.begin(), v.end(), x) - v.begin()) - 1;
      const double frac = v[i + 1] > v[i] ? (x - v[i]) / (v[i + 1] - v[i]) : 1.0;
      *f = (static_cast<double>(i) + frac) / m;
      *g = 1 - *f;
      return;
    }
  }
}

// 1 - F^n and F^n, precise in both tails.
double one_minus_pow(double f, double g, double n) {
  const double logf = g < 0.5 ? std::log1p(-g) : std::log(f);
  return -std::expm1(n * logf);
}

// E[max] of an empirical X exactly: F is linear on each knot segment, so
// integral (1 - F^n) over it is dx - dx (F1^(n+1) - F0^(n+1)) / ((n+1)(F1 - F0)).
double empirical_max(const std::vector<double>& v, double n) {
  const auto m = static_cast<double>(v.size() - 1);
  double e = v.front();
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    const double dx = v[i + 1] - v[i];
    const double f0 = static_cast<double>(i) / m, f1 = static_cast<double>(i + 1) / m;
    const double p1 = std::exp((n + 1) * std::log(f1));
    const double p0 = i == 0 ? 0.0 : std::exp((n + 1) * std::log(f0));
    e += dx - dx * (p1 - p0) / ((n + 1) * (f1 - f0));
  }
  return e;
}

// Simpson's rule over [a, b] with kIntervals intervals.
template <typename F>
double simpson(F f, double a, double b) {
  const double h = (b - a) / kIntervals;
  double sum = f(a) + f(b);
  for (int i = 1; i < kIntervals; ++i) sum += (i % 2 ? 4 : 2) * f(a + i * h);
  return sum * h / 3;
}

}  // namespace

double normal_max_exact(int64_t n) {
  const double nn = static_cast<double>(n);
  // c_N = integral_0^15 (1 - Phi^n) dz - integral_-15^0 Phi^n dz, each half on
  // its own grid (the integrand jumps by 1 at z = 0).
  const double upper = simpson([&](double z) { return one_minus_pow(normal_ccdf(-z), normal_ccdf(z), nn); }, 0, 15);
  const double lower = simpson([&](double z) { return std::exp(nn * std::log(normal_ccdf(-z))); }, -15, 0);
  return upper - lower;
}

double normal_max_gumbel(int64_t n) {
  if (n <= 1) return 0;
  const double l = std::log(static_cast<double>(n)), r = std::sqrt(2 * l);
  const double b = r - (std::log(l) + std::log(4 * std::numbers::pi)) / (2 * r);
  return b + kEulerGamma / r;
}

double jitter_cdf(const Jitter& j, double x) {
  double f = 0, g = 1;
  cdf_pair(j, x, &f, &g);
  return f;
}

double jitter_quantile(const Jitter& j, double p) {
  double lo = 0, hi = 2;
  while (jitter_cdf(j, hi) < p && hi < 1e6) hi *= 2;
  for (int i = 0; i < 200 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (jitter_cdf(j, mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double expected_max(const Jitter& j, int64_t n) {
  const auto nn = static_cast<double>(n);
  if (!j.active()) return 1.0;
  if (j.dist == JitterDist::kNormal) return 1 + j.cv * normal_max_exact(n);
  if (j.dist == JitterDist::kEmpirical) return empirical_max(j.samples, nn);
  // Below L, F^n < 1e-300; above U, n (1 - F) < 1e-17.
  const double lo = jitter_quantile(j, std::min(1e-12, std::pow(1e-300, 1 / nn)));
  double hi = jitter_quantile(j, 0.5);
  for (double f = 0, g = 1; ; hi *= 1.25) {
    cdf_pair(j, hi, &f, &g);
    if (g * nn < 1e-17 || hi > 1e6) break;
  }
  return lo + simpson([&](double x) {
    double f = 0, g = 1;
    cdf_pair(j, x, &f, &g);
    return one_minus_pow(f, g, nn);
  }, lo, hi);
}

double gumbel_max(const Jitter& j, int64_t n) {
  if (!j.active() || n <= 1) return 1.0;
  if (j.dist == JitterDist::kNormal) return 1 + j.cv * normal_max_gumbel(n);
  const auto nn = static_cast<double>(n);
  const double b = jitter_quantile(j, 1 - 1 / nn);
  const double a = jitter_quantile(j, 1 - 1 / (std::numbers::e * nn)) - b;
  return b + kEulerGamma * a;
}

}  // namespace fleetsim
