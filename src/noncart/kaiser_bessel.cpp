#include "noncart/kaiser_bessel.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/math.hpp"

namespace radstream {

int oversampled_grid_size(int matrix, double sigma) {
  int g = int(std::ceil(sigma * matrix - 1e-9));
  if (g % 2) ++g;
  return g;
}

double beatty_beta(int width, double sigma) {
  const double a = double(width) / sigma * (sigma - 0.5);
  const double arg = a * a - 0.8;
  if (arg <= 0)
    throw ConfigError("kernel width " + std::to_string(width) + " is too small for oversampling " +
                      std::to_string(sigma) + " (Beatty's beta is undefined)");
  return kPi * std::sqrt(arg);
}

KaiserBesselLut::KaiserBesselLut(int width, double sigma, int resolution)
    : width_(width), sigma_(sigma), beta_(beatty_beta(width, sigma)), resolution_(resolution) {
  if (width < 2) throw ConfigError("kernel width " + std::to_string(width) + " must be >= 2");
  if (resolution < 2)
    throw ConfigError("kernel table resolution " + std::to_string(resolution) + " must be >= 2");
  edge_ = resolution * width / 2;
  table_.resize(edge_ + 2);
  for (int i = 0; i <= edge_; ++i) table_[i] = float(exact(double(i) / resolution));
  table_[edge_ + 1] = table_[edge_];
}

double KaiserBesselLut::exact(double t) const {
  const double u = 2.0 * t / width_;
  if (std::abs(u) >= 1.0) return 0.0;
  return std::cyl_bessel_i(0.0, beta_ * std::sqrt(1.0 - u * u)) / std::cyl_bessel_i(0.0, beta_);
}

double KaiserBesselLut::fourier(double f) const {
  // 2 * integral_0^{W/2} C(t) cos(2 pi f t) dt over the linear segments of the table.
  const double w = 2.0 * kPi * f;
  const double h = 1.0 / resolution_;
  double sum = 0.0;
  for (int i = 0; i < edge_; ++i) {
    const double a = i * h, b = a + h;
    const double ca = table_[i], cb = table_[i + 1];
    const double q = (cb - ca) / h, p = ca - q * a;
    if (std::abs(w) < 1e-12) {
      sum += p * (b - a) + 0.5 * q * (b * b - a * a);
    } else {
      auto F = [&](double t) { return (p + q * t) * std::sin(w * t) / w + q * std::cos(w * t) / (w * w); };
      sum += F(b) - F(a);
    }
  }
  return 2.0 * sum;
}

}  // namespace radstream
