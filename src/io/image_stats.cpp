#include "io/image_stats.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace radstream {

float percentile(std::span<const float> v, double q) {
  std::vector<float> f;
  f.reserve(v.size());
  for (float x : v)
    if (std::isfinite(x)) f.push_back(x);
  if (f.empty()) return 0.f;
  const double pos = std::clamp(q, 0.0, 100.0) / 100.0 * double(f.size() - 1);
  const std::size_t i = std::size_t(pos);
  std::nth_element(f.begin(), f.begin() + i, f.end());
  const float lo = f[i];
  if (i + 1 >= f.size()) return lo;
  const float hi = *std::min_element(f.begin() + i + 1, f.end());
  return float(lo + (pos - double(i)) * (hi - lo));
}

double relative_error(std::span<const float> a, std::span<const float> b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

double nrmse_scaled(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
  }
  const double s = aa > 0 ? ab / aa : 0.0;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = s * a[i] - b[i];
    num += d * d;
    den += double(b[i]) * b[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace radstream
