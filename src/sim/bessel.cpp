#include "sim/bessel.hpp"

#include <cmath>

#include "core/math.hpp"

namespace radstream {

double bessel_j1(double x) {
  const double ax = std::abs(x);
  if (ax <= 3.0) {
    const double y = (x / 3.0) * (x / 3.0);
    const double p =
        0.5 +
        y * (-0.56249985 +
             y * (0.21093573 + y * (-0.03954289 + y * (0.00443319 + y * (-0.00031761 + y * 0.00001109)))));
    return x * p;
  }
  const double z = 3.0 / ax;
  const double f1 =
      0.79788456 +
      z * (0.00000156 +
           z * (0.01659667 + z * (0.00017105 + z * (-0.00249511 + z * (0.00113653 + z * -0.00020033)))));
  const double th =
      ax - 2.35619449 +
      z * (0.12499612 +
           z * (0.00005650 + z * (-0.00637879 + z * (0.00074348 + z * (0.00079824 + z * -0.00029166)))));
  const double v = f1 * std::cos(th) / std::sqrt(ax);
  return x < 0 ? -v : v;
}

double jinc_disc(double q) {
  const double aq = std::abs(q);
  if (aq < 1e-12) return kPi;
  return bessel_j1(2.0 * kPi * aq) / aq;
}

}  // namespace radstream
