// The coils' noise covariance sum over noise samples, Sum_s n_s n_s^H, accumulated in double (the
// prewhitening's Psi = Sum / (N - 1), stream/noise_prewhitener.hpp). The CPU and CUDA twins agree to double
// rounding (tests/gpu parity test); the CUDA one keeps the sum on the GPU, one block per coil pair.
#pragma once
#include <complex>
#include <memory>
#include <span>
#include <vector>

#include "core/buffer.hpp"

namespace radstream {

class NoiseCovariance {
 public:
  virtual ~NoiseCovariance() = default;
  // data [coils][samples] of one noise acquisition (host memory), coils as made with. Throws InputError when
  // the sizes disagree.
  virtual void add(std::span<const cfloat> data, int samples) = 0;
  // The sum so far, [coils][coils] row-major, Hermitian (both triangles filled).
  virtual std::vector<std::complex<double>> sum() const = 0;
  int coils() const { return coils_; }

 protected:
  explicit NoiseCovariance(int coils) : coils_(coils) {}
  void check(std::span<const cfloat> data, int samples) const;
  int coils_;
};

std::unique_ptr<NoiseCovariance> make_noise_covariance_cpu(int coils);
// On GPU `gpu` (-1: the current one). Throws CudaError in a build without CUDA or without a GPU.
std::unique_ptr<NoiseCovariance> make_noise_covariance_cuda(int coils, int gpu);

}  // namespace radstream
