#include <fmt/format.h>

#include "core/error.hpp"
#include "linalg/noise_covariance.hpp"

namespace radstream {

void NoiseCovariance::check(std::span<const cfloat> data, int samples) const {
  if (samples < 0 || data.size() != std::size_t(coils_) * std::size_t(samples))
    throw InputError(fmt::format("a noise acquisition of {} values is not {} coils x {} samples", data.size(),
                                 coils_, samples));
}

namespace {

using cd = std::complex<double>;

class NoiseCovarianceCpu final : public NoiseCovariance {
 public:
  explicit NoiseCovarianceCpu(int coils)
      : NoiseCovariance(coils), sum_(std::size_t(coils) * std::size_t(coils), cd(0)) {}

  void add(std::span<const cfloat> data, int samples) override {
    check(data, samples);
    const std::size_t C = std::size_t(coils_), S = std::size_t(samples);
    for (std::size_t i = 0; i < C; ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        cd acc(0);
        for (std::size_t s = 0; s < S; ++s) acc += cd(data[i * S + s]) * std::conj(cd(data[j * S + s]));
        sum_[i * C + j] += acc;
      }
  }

  std::vector<cd> sum() const override {
    const std::size_t C = std::size_t(coils_);
    std::vector<cd> out(C * C);
    for (std::size_t i = 0; i < C; ++i)
      for (std::size_t j = 0; j <= i; ++j) {
        out[i * C + j] = sum_[i * C + j];
        out[j * C + i] = std::conj(sum_[i * C + j]);
      }
    return out;
  }

 private:
  std::vector<cd> sum_;  // lower triangle
};

}  // namespace

std::unique_ptr<NoiseCovariance> make_noise_covariance_cpu(int coils) {
  if (coils < 1) throw InputError(fmt::format("noise covariance of {} coils", coils));
  return std::make_unique<NoiseCovarianceCpu>(coils);
}

#ifndef RADSTREAM_HAVE_CUDA
std::unique_ptr<NoiseCovariance> make_noise_covariance_cuda(int, int) {
  throw CudaError("make_noise_covariance_cuda", "this build has no CUDA backend", __FILE__, __LINE__);
}
#endif

}  // namespace radstream
