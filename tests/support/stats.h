// Statistics the distribution tests share.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace fleetsim::test_support {

// Kolmogorov-Smirnov: sqrt(n) * sup |F_n - F| of the sample against `cdf`.
template <typename Cdf>
double ks_scaled(std::vector<double> x, Cdf cdf) {
  std::sort(x.begin(), x.end());
  const double n = static_cast<double>(x.size());
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double f = cdf(x[i]);
    d = std::max({d, f - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - f});
  }
  return d * std::sqrt(n);
}

}  // namespace fleetsim::test_support
