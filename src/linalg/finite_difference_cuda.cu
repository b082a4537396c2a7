#include "gpu/cuda_check.cuh"
#include "linalg/finite_difference.hpp"

namespace radstream {
namespace {

__global__ void fd_forward(const float2* __restrict__ x, int N, float2* __restrict__ y) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (c >= N) return;
  const std::size_t P = std::size_t(N) * N, i = std::size_t(r) * N + c;
  const float2 v = x[i], a = x[std::size_t(r) * N + (c + 1) % N], b = x[std::size_t((r + 1) % N) * N + c];
  y[i] = make_float2(a.x - v.x, a.y - v.y);
  y[P + i] = make_float2(b.x - v.x, b.y - v.y);
}

__global__ void fd_adjoint(const float2* __restrict__ y, int N, float2* __restrict__ x) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
  if (c >= N) return;
  const std::size_t P = std::size_t(N) * N, i = std::size_t(r) * N + c;
  const float2 l = y[std::size_t(r) * N + (c + N - 1) % N], s = y[i];
  const float2 u = y[P + std::size_t((r + N - 1) % N) * N + c], t = y[P + i];
  x[i] = make_float2(l.x - s.x + u.x - t.x, l.y - s.y + u.y - t.y);
}

}  // namespace

FiniteDifferenceCuda::FiniteDifferenceCuda(int matrix, gpu::StreamRef stream)
    : LinearOperator(Extents{std::size_t(matrix), std::size_t(matrix)},
                     Extents{2, std::size_t(matrix), std::size_t(matrix)}, Location::Device),
      N_(matrix),
      stream_(stream) {
  if (matrix < 2) throw ConfigError("finite differences: matrix " + std::to_string(matrix) + " must be >= 2");
}

void FiniteDifferenceCuda::forward(const cfloat* d_x, cfloat* d_y) {
  fd_forward<<<dim3(unsigned((N_ + 255) / 256), unsigned(N_)), 256, 0, static_cast<cudaStream_t>(stream_)>>>(
      reinterpret_cast<const float2*>(d_x), N_, reinterpret_cast<float2*>(d_y));
  CUDA_CHECK_LAUNCH("fd_forward");
}

void FiniteDifferenceCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  fd_adjoint<<<dim3(unsigned((N_ + 255) / 256), unsigned(N_)), 256, 0, static_cast<cudaStream_t>(stream_)>>>(
      reinterpret_cast<const float2*>(d_y), N_, reinterpret_cast<float2*>(d_x));
  CUDA_CHECK_LAUNCH("fd_adjoint");
}

}  // namespace radstream
