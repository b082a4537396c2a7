#include "sim/nudft.hpp"

#include <cmath>

namespace radstream {

std::vector<std::complex<double>> adjoint_nudft(std::span<const float> traj,
                                                std::span<const std::complex<float>> data,
                                                std::span<const float> weights, int N) {
  std::vector<std::complex<double>> img(std::size_t(N) * N);
  const std::size_t n = data.size();
#pragma omp parallel for schedule(static)
  for (int y = 0; y < N; ++y) {
    for (int x = 0; x < N; ++x) {
      std::complex<double> acc = 0.0;
      const double px = x - N / 2, py = y - N / 2;
      for (std::size_t j = 0; j < n; ++j) {
        const double ph = 2.0 * M_PI * (double(traj[2 * j]) * px + double(traj[2 * j + 1]) * py);
        const double w = weights.empty() ? 1.0 : double(weights[j]);
        acc += w * std::complex<double>(data[j]) * std::complex<double>(std::cos(ph), std::sin(ph));
      }
      img[std::size_t(y) * N + x] = acc;
    }
  }
  return img;
}

}  // namespace radstream
