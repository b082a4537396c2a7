#include "sim/coil_maps.hpp"

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/math.hpp"

namespace radstream {

CoilMaps::CoilMaps(int coils) : coils_(coils) {
  if (coils < 1 || coils > 64) throw ConfigError("coils = " + std::to_string(coils) + " is outside 1..64");
  if (coils == 1) {
    freqs_ = {{0.0, 0.0}};
    coef_ = {1.0};
    return;
  }
  // Harmonics on a 3 x 3 lattice of period L = 4 FOV units (the FOV spans 2): one bump per coil, no wrap
  // inside.
  constexpr double L = 4.0;
  constexpr double kDecay = 0.5;
  double peak = 0.0;
  for (int j = -1; j <= 1; ++j)
    for (int i = -1; i <= 1; ++i) {
      freqs_.push_back({i / L, j / L});
      peak += std::exp(-kDecay * (i * i + j * j));
    }
  coef_.resize(std::size_t(coils) * freqs_.size());
  for (int c = 0; c < coils; ++c) {
    // Two rings for many coils, alternating, so that neighbours differ.
    const double ring = (coils > 16 && c % 2) ? 1.05 : 1.3;
    const double alpha = 2.0 * kPi * c / coils;
    const double px = ring * std::cos(alpha), py = ring * std::sin(alpha);
    const double phase0 = 0.7 * c;
    for (std::size_t l = 0; l < freqs_.size(); ++l) {
      const auto& f = freqs_[l];
      const int i = int(std::lround(f[0] * L)), j = int(std::lround(f[1] * L));
      const double ph = -2.0 * kPi * (f[0] * px + f[1] * py) + phase0;
      coef_[std::size_t(c) * freqs_.size() + l] =
          std::exp(-kDecay * (i * i + j * j)) / peak * std::complex<double>(std::cos(ph), std::sin(ph));
    }
  }
}

std::complex<double> CoilMaps::value(int coil, double x, double y) const {
  std::complex<double> s = 0.0;
  for (std::size_t l = 0; l < freqs_.size(); ++l) {
    const double ph = 2.0 * kPi * (freqs_[l][0] * x + freqs_[l][1] * y);
    s += coefficient(coil, int(l)) * std::complex<double>(std::cos(ph), std::sin(ph));
  }
  return s;
}

}  // namespace radstream
