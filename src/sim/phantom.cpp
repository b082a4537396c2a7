#include "sim/phantom.hpp"

#include <cmath>

#include "core/math.hpp"
#include "sim/bessel.hpp"

namespace radstream {

std::vector<Ellipse> modified_shepp_logan() {
  // Toft's modified intensities; y negated (and rotations mirrored) so that the image, stored with row 0 at
  // the top, shows the usual orientation.
  return {
      {1.0, 0.69, 0.92, 0.0, 0.0, 0.0},        {-0.8, 0.6624, 0.8740, 0.0, 0.0184, 0.0},
      {-0.2, 0.1100, 0.3100, 0.22, 0.0, 18.0}, {-0.2, 0.1600, 0.4100, -0.22, 0.0, -18.0},
      {0.1, 0.2100, 0.2500, 0.0, -0.35, 0.0},  {0.1, 0.0460, 0.0460, 0.0, -0.1, 0.0},
      {0.1, 0.0460, 0.0460, 0.0, 0.1, 0.0},    {0.1, 0.0460, 0.0230, -0.08, 0.605, 0.0},
      {0.1, 0.0230, 0.0230, 0.0, 0.606, 0.0},  {0.1, 0.0230, 0.0460, 0.06, 0.605, 0.0},
  };
}

Ellipse catheter_tip(double x, double y) {
  return {0.8, 0.035, 0.035, x, y, 0.0};
}

std::complex<double> ellipses_fourier(const std::vector<Ellipse>& es, double kx, double ky) {
  std::complex<double> sum = 0.0;
  for (const Ellipse& e : es) {
    const double p = e.phi_deg * kPi / 180.0;
    const double c = std::cos(p), s = std::sin(p);
    const double kr = c * kx + s * ky, ks = -s * kx + c * ky;  // kappa in the ellipse's axes
    const double q = std::hypot(e.a * kr, e.b * ks);
    const double mag = e.intensity * e.a * e.b * jinc_disc(q);
    const double ph = -2.0 * kPi * (kx * e.x0 + ky * e.y0);
    sum += mag * std::complex<double>(std::cos(ph), std::sin(ph));
  }
  return sum;
}

double ellipses_value(const std::vector<Ellipse>& es, double x, double y) {
  double v = 0.0;
  for (const Ellipse& e : es) {
    const double p = e.phi_deg * kPi / 180.0;
    const double c = std::cos(p), s = std::sin(p);
    const double dx = x - e.x0, dy = y - e.y0;
    const double u = (c * dx + s * dy) / e.a, w = (-s * dx + c * dy) / e.b;
    if (u * u + w * w <= 1.0) v += e.intensity;
  }
  return v;
}

std::vector<float> rasterize(const std::vector<Ellipse>& es, int n, int sub) {
  std::vector<float> img(std::size_t(n) * n);
  const double px = 2.0 / n;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      double acc = 0.0;
      for (int sj = 0; sj < sub; ++sj)
        for (int si = 0; si < sub; ++si) {
          const double x = (i - n / 2 + (si + 0.5) / sub - 0.5) * px;
          const double y = (j - n / 2 + (sj + 0.5) / sub - 0.5) * px;
          acc += ellipses_value(es, x, y);
        }
      img[std::size_t(j) * n + i] = float(acc / (sub * sub));
    }
  return img;
}

}  // namespace radstream
