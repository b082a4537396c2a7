// Smooth analytic coil sensitivities, each a short sum of plane waves s_c(u) = sum_l a_cl exp(2 pi i f_l .
// u), so that the k-space of phantom x sensitivity stays exact: FT(m s_c)(kappa) = sum_l a_cl F(kappa - f_l).
// Coils sit on a ring around the field of view, each a smooth bump peaking at its position with its own
// phase.
#pragma once
#include <array>
#include <complex>
#include <vector>

namespace radstream {

class CoilMaps {
 public:
  explicit CoilMaps(int coils);  // 1..64; one coil is uniform (s = 1)
  int coils() const { return coils_; }
  const std::vector<std::array<double, 2>>& frequencies() const { return freqs_; }
  std::complex<double> coefficient(int coil, int l) const {
    return coef_[std::size_t(coil) * freqs_.size() + l];
  }
  std::complex<double> value(int coil, double x, double y) const;

 private:
  int coils_;
  std::vector<std::array<double, 2>> freqs_;
  std::vector<std::complex<double>> coef_;
};

}  // namespace radstream
