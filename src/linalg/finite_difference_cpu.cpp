#include "linalg/finite_difference.hpp"

#include "core/error.hpp"

namespace radstream {

namespace {
Extents image(int N) {
  if (N < 2) throw ConfigError("finite differences: matrix " + std::to_string(N) + " must be >= 2");
  return Extents{std::size_t(N), std::size_t(N)};
}
}  // namespace

FiniteDifferenceCpu::FiniteDifferenceCpu(int matrix)
    : LinearOperator(image(matrix), Extents{2, std::size_t(matrix), std::size_t(matrix)}, Location::Host),
      N_(matrix) {}

void FiniteDifferenceCpu::forward(const cfloat* x, cfloat* y) {
  const long N = N_, P = N * N;
#pragma omp parallel for schedule(static)
  for (long r = 0; r < N; ++r)
    for (long c = 0; c < N; ++c) {
      const cfloat v = x[r * N + c];
      y[r * N + c] = x[r * N + (c + 1) % N] - v;
      y[P + r * N + c] = x[((r + 1) % N) * N + c] - v;
    }
}

void FiniteDifferenceCpu::adjoint(const cfloat* y, cfloat* x) {
  const long N = N_, P = N * N;
#pragma omp parallel for schedule(static)
  for (long r = 0; r < N; ++r)
    for (long c = 0; c < N; ++c)
      x[r * N + c] =
          y[r * N + (c + N - 1) % N] - y[r * N + c] + y[P + ((r + N - 1) % N) * N + c] - y[P + r * N + c];
}

}  // namespace radstream
