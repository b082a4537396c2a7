#include "fft/toeplitz_kernel.hpp"

namespace radstream {

void toeplitz_kernel_cpu(const cfloat* t, int N, cfloat* kernel, const FftwPlan& fft) {
  const int M = 2 * N;
  const float scale = 1.f / (float(M) * float(M));
  for (int y = 0; y < M; ++y)
    for (int x = 0; x < M; ++x)
      kernel[std::size_t(y) * M + x] =
          (x == N || y == N) ? cfloat(0.f) : t[std::size_t((y + N) % M) * M + (x + N) % M] * scale;
  fft.execute(kernel);
}

}  // namespace radstream
