// Noise prewhitening of a scanner stream (an MRD session's noise acquisitions, flag IS_NOISE_MEASUREMENT):
// the coils' noise covariance Psi = sum n n^H / (N - 1) accumulated in double over every noise sample, then
// every later spoke's coil vector y -> s L^-1 y with Psi = L L^H (Cholesky), so that the coils' noise is
// white and of unit variance. s = sqrt(2 x acquisition dwell / noise dwell x relative receiver noise
// bandwidth) corrects for noise scans read at another bandwidth, as Gadgetron's noise adjustment does (s = 1
// when a dwell time is unknown; the bandwidth 0.793 when the header does not give
// relativeReceiverNoiseBandwidth).
#pragma once
#include <complex>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "linalg/noise_covariance.hpp"

namespace radstream {

class NoisePrewhitener {
 public:
  // How the covariance sum is accumulated for a coil count: on the CPU, or on the stream's GPU.
  using MakeCovariance = std::function<std::unique_ptr<NoiseCovariance>(int coils)>;
  explicit NoisePrewhitener(MakeCovariance make = make_noise_covariance_cpu) : make_(std::move(make)) {}
  // data [coils][samples] of one noise acquisition; dwell_us its sample_time_us. Throws InputError when the
  // coil count changes.
  void add_noise(std::span<const std::complex<float>> data, int coils, int samples, float dwell_us);
  bool has_noise() const { return count_ > 1; }
  std::size_t noise_samples() const { return count_; }
  // Computes the matrix (once, at the first imaging spoke). Throws InputError when the covariance is not
  // positive definite (a dead or duplicated coil), naming the coil.
  void prepare(float acquisition_dwell_us, double receiver_bandwidth);
  bool ready() const { return !w_.empty(); }
  // data [coils][samples], in place.
  void apply(std::span<std::complex<float>> data, int samples) const;
  // The covariance Psi (row-major [coils][coils], double) and a one-line summary for the log.
  const std::vector<std::complex<double>>& covariance() const { return psi_; }
  std::string summary() const;
  double scale() const { return scale_; }

 private:
  MakeCovariance make_;
  std::unique_ptr<NoiseCovariance> sum_;
  int coils_ = 0;
  std::size_t count_ = 0;
  float noise_dwell_us_ = 0;
  std::vector<std::complex<double>> psi_;
  std::vector<std::complex<float>> w_;  // s L^-1, row-major
  double scale_ = 1.0;
};

}  // namespace radstream
