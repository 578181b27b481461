// Closed forms for the straggler tax: the expected maximum of N iid draws of a
// mean-1 jitter variate X (normal, lognormal, gamma, empirical), by numerical
// integration of E[max] = L + integral_L^U (1 - F(x)^N) dx, and the Gumbel
// (extreme-value) approximation. For a step of compute T with jitter X on every
// rank, then one collective of cost C over all N ranks, the step's mean is
// T * E[max] + C and the jitter-free step T + C, so the tax is
// (E[max] - 1) * T / (T + C). See docs/straggler-tax.md.
#pragma once

#include <cstdint>

#include "fleetsim/scenario.h"

namespace fleetsim {

// E[max of n iid standard normals] (c_N): 1.42, 2.34, 3.25, 3.63, 3.97 at
// N = 8, 64, 1024, 4096, 16384. REQUIRES: n >= 1.
double normal_max_exact(int64_t n);
// The Gumbel refinement b_N + gamma / sqrt(2 ln N), with
// b_N = sqrt(2 ln N) - (ln ln N + ln 4 pi) / (2 sqrt(2 ln N)); 0 for n == 1.
double normal_max_gumbel(int64_t n);

// E[max of n iid X] for the jitter `j` (X has mean 1; normal: 1 + cv * c_N,
// ignoring the truncation at 0, which matters only for cv above about 20%).
double expected_max(const Jitter& j, int64_t n);
// The Gumbel approximation b + gamma * a with b = Q(1 - 1/n) and
// a = Q(1 - 1/(e n)) - b (Q the quantile function); normal: the refinement above.
double gumbel_max(const Jitter& j, int64_t n);

// CDF and quantile of X (exposed for tests).
double jitter_cdf(const Jitter& j, double x);
double jitter_quantile(const Jitter& j, double p);

}  // namespace fleetsim
