#include "sim/nudft.hpp"

#include <cmath>

#include "core/math.hpp"

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
        const double ph = 2.0 * kPi * (double(traj[2 * j]) * px + double(traj[2 * j + 1]) * py);
        const double w = weights.empty() ? 1.0 : double(weights[j]);
        acc += w * std::complex<double>(data[j]) * std::complex<double>(std::cos(ph), std::sin(ph));
      }
      img[std::size_t(y) * N + x] = acc;
    }
  }
  return img;
}

std::vector<std::complex<double>> forward_nudft(std::span<const float> traj, int dims,
                                                std::span<const std::complex<float>> image,
                                                std::array<int, 3> matrix) {
  const std::size_t n = traj.size() / std::size_t(dims);
  std::vector<std::complex<double>> out(n);
  const int nx = matrix[0], ny = dims > 1 ? matrix[1] : 1, nz = dims > 2 ? matrix[2] : 1;
#pragma omp parallel for schedule(static)
  for (long j = 0; j < long(n); ++j) {
    const double kx = traj[std::size_t(dims) * j], ky = dims > 1 ? traj[std::size_t(dims) * j + 1] : 0.0,
                 kz = dims > 2 ? traj[std::size_t(dims) * j + 2] : 0.0;
    std::complex<double> acc = 0.0;
    for (int z = 0; z < nz; ++z)
      for (int y = 0; y < ny; ++y)
        for (int x = 0; x < nx; ++x) {
          const double ph = -2.0 * kPi * (kx * (x - nx / 2) + ky * (y - ny / 2) + kz * (z - nz / 2));
          acc += std::complex<double>(image[(std::size_t(z) * ny + y) * nx + x]) *
                 std::complex<double>(std::cos(ph), std::sin(ph));
        }
    out[j] = acc;
  }
  return out;
}

}  // namespace radstream
