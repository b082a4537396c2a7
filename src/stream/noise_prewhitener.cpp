#include "stream/noise_prewhitener.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace radstream {

using cd = std::complex<double>;

void NoisePrewhitener::add_noise(std::span<const std::complex<float>> data, int coils, int samples,
                                 float dwell_us) {
  if (coils_ == 0) {
    sum_ = make_(coils);
    coils_ = coils;
  }
  if (coils != coils_)
    throw InputError(fmt::format("a noise acquisition of {} coils after ones of {}", coils, coils_));
  sum_->add(data, samples);
  count_ += std::size_t(samples);
  if (dwell_us > 0) noise_dwell_us_ = dwell_us;
}

void NoisePrewhitener::prepare(float acquisition_dwell_us, double receiver_bandwidth) {
  if (!has_noise()) return;
  const std::size_t C = std::size_t(coils_);
  psi_ = sum_->sum();
  for (auto& v : psi_) v /= double(count_ - 1);
  // Cholesky Psi = L L^H (lower), in double.
  std::vector<cd> L(C * C, cd(0));
  for (std::size_t j = 0; j < C; ++j) {
    double d = psi_[j * C + j].real();
    for (std::size_t k = 0; k < j; ++k) d -= std::norm(L[j * C + k]);
    if (!(d > 1e-30 * std::max(1.0, psi_[0].real())))
      throw InputError(
          fmt::format("the noise covariance is not positive definite at coil {} (a dead or duplicated "
                      "coil?): no prewhitening",
                      j));
    L[j * C + j] = std::sqrt(d);
    for (std::size_t i = j + 1; i < C; ++i) {
      cd v = psi_[i * C + j];
      for (std::size_t k = 0; k < j; ++k) v -= L[i * C + k] * std::conj(L[j * C + k]);
      L[i * C + j] = v / L[j * C + j].real();
    }
  }
  // L^-1 (lower triangular), by forward substitution on the identity.
  std::vector<cd> inv(C * C, cd(0));
  for (std::size_t col = 0; col < C; ++col)
    for (std::size_t i = col; i < C; ++i) {
      cd v = i == col ? cd(1) : cd(0);
      for (std::size_t k = col; k < i; ++k) v -= L[i * C + k] * inv[k * C + col];
      inv[i * C + col] = v / L[i * C + i];
    }
  scale_ = (noise_dwell_us_ > 0 && acquisition_dwell_us > 0)
               ? std::sqrt(2.0 * double(acquisition_dwell_us) / double(noise_dwell_us_) * receiver_bandwidth)
               : 1.0;
  w_.resize(C * C);
  for (std::size_t k = 0; k < C * C; ++k) w_[k] = std::complex<float>(inv[k] * scale_);
}

void NoisePrewhitener::apply(std::span<std::complex<float>> data, int samples) const {
  // W is lower triangular: row i needs inputs 0..i only, so rows go from the last up, in place (no scratch).
  const std::size_t C = std::size_t(coils_);
  for (int s = 0; s < samples; ++s)
    for (std::size_t i = C; i-- > 0;) {
      std::complex<float> acc = 0;
      for (std::size_t k = 0; k <= i; ++k) acc += w_[i * C + k] * data[k * samples + s];
      data[i * samples + s] = acc;
    }
}

std::string NoisePrewhitener::summary() const {
  const std::size_t C = std::size_t(coils_);
  double lo = 1e300, hi = 0, off = 0;
  for (std::size_t i = 0; i < C; ++i) {
    const double s = std::sqrt(psi_[i * C + i].real());
    lo = std::min(lo, s);
    hi = std::max(hi, s);
    for (std::size_t j = 0; j < i; ++j)
      off = std::max(off,
                     std::abs(psi_[i * C + j]) / std::sqrt(psi_[i * C + i].real() * psi_[j * C + j].real()));
  }
  return fmt::format(
      "noise of {} coils from {} samples: sigma {:.4g}..{:.4g}, largest correlation {:.3f}, "
      "bandwidth scale {:.4f}",
      C, count_, lo, hi, off, scale_);
}

}  // namespace radstream
