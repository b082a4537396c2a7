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

std::vector<std::complex<double>> adjoint_nudft_at(std::span<const float> traj, int dims,
                                                   std::span<const std::complex<float>> data, int batch,
                                                   std::array<int, 3> matrix,
                                                   std::span<const std::size_t> pixels) {
  const std::size_t n = traj.size() / std::size_t(dims), m = pixels.size();
  std::vector<std::complex<double>> out(std::size_t(batch) * m);
  const int nx = matrix[0], ny = dims > 1 ? matrix[1] : 1;
#pragma omp parallel for schedule(dynamic, 1)
  for (long q = 0; q < long(m); ++q) {
    const std::size_t pix = pixels[q];
    const double p[3] = {double(long(pix % nx) - nx / 2), double(long(pix / nx % ny) - ny / 2),
                         double(long(pix / (std::size_t(nx) * ny)) - (dims > 2 ? matrix[2] / 2 : 0))};
    std::vector<std::complex<double>> acc(batch, 0.0);
    for (std::size_t j = 0; j < n; ++j) {
      double ph = 0;
      for (int a = 0; a < dims; ++a) ph += double(traj[std::size_t(dims) * j + a]) * p[a];
      ph *= 2.0 * kPi;
      const std::complex<double> e(std::cos(ph), std::sin(ph));
      for (int b = 0; b < batch; ++b) acc[b] += std::complex<double>(data[std::size_t(b) * n + j]) * e;
    }
    for (int b = 0; b < batch; ++b) out[std::size_t(b) * m + q] = acc[b];
  }
  return out;
}

std::vector<std::complex<double>> forward_nudft_at(std::span<const float> traj, int dims,
                                                   std::span<const std::complex<float>> image, int batch,
                                                   std::array<int, 3> matrix,
                                                   std::span<const std::size_t> points) {
  const std::size_t m = points.size();
  const int N[3] = {matrix[0], dims > 1 ? matrix[1] : 1, dims > 2 ? matrix[2] : 1};
  const std::size_t image_size = std::size_t(N[0]) * N[1] * N[2];
  std::vector<std::complex<double>> out(std::size_t(batch) * m);
#pragma omp parallel for schedule(dynamic, 1)
  for (long q = 0; q < long(m); ++q) {
    const std::size_t j = points[q];
    // The phase separates per axis: exp(-2 pi i k . p) = e_x(x) e_y(y) e_z(z).
    std::vector<std::complex<double>> e[3];
    for (int a = 0; a < 3; ++a) {
      const double k = a < dims ? double(traj[std::size_t(dims) * j + a]) : 0.0;
      e[a].resize(N[a]);
      for (int i = 0; i < N[a]; ++i) {
        const double ph = -2.0 * kPi * k * double(i - N[a] / 2);
        e[a][i] = {std::cos(ph), std::sin(ph)};
      }
    }
    for (int b = 0; b < batch; ++b) {
      const std::complex<float>* img = image.data() + std::size_t(b) * image_size;
      std::complex<double> acc = 0.0;
      for (int z = 0; z < N[2]; ++z)
        for (int y = 0; y < N[1]; ++y) {
          const std::complex<float>* row = img + (std::size_t(z) * N[1] + y) * N[0];
          std::complex<double> r = 0.0;
          for (int x = 0; x < N[0]; ++x) r += std::complex<double>(row[x]) * e[0][x];
          acc += r * e[1][y] * e[2][z];
        }
      out[std::size_t(b) * m + q] = acc;
    }
  }
  return out;
}

}  // namespace radstream
