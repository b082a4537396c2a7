#include "fft/cufft_plan.hpp"
#include "fft/toeplitz_kernel.hpp"
#include "gpu/cuda_check.cuh"

namespace radstream {
namespace {

constexpr int kThreads = 256;

// kernel[y][x] = t[(y + N) % M][(x + N) % M] / M^2, 0 on the row and column of d = -N.
__global__ void shift_psf(const float2* __restrict__ t, int N, float2* __restrict__ kernel) {
  const int M = 2 * N;
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= M) return;
  const float s = (x == N || y == N) ? 0.f : 1.f / (float(M) * float(M));
  const float2 v = t[std::size_t((y + N) % M) * M + (x + N) % M];
  kernel[std::size_t(y) * M + x] = make_float2(v.x * s, v.y * s);
}

__global__ void real_part(const float2* __restrict__ in, std::size_t n, float* __restrict__ out) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i].x;
}

}  // namespace

void toeplitz_kernel_cuda(const cfloat* d_t, int N, cfloat* d_work, const CufftPlan& fft, float* d_kernel_re,
                          gpu::StreamRef stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const int M = 2 * N;
  const std::size_t cells = std::size_t(M) * M;
  shift_psf<<<dim3(unsigned((M + kThreads - 1) / kThreads), unsigned(M)), kThreads, 0, s>>>(
      reinterpret_cast<const float2*>(d_t), N, reinterpret_cast<float2*>(d_work));
  CUDA_CHECK_LAUNCH("toeplitz kernel shift_psf");
  fft.execute(d_work, FftDirection::Forward);
  real_part<<<unsigned((cells + kThreads - 1) / kThreads), kThreads, 0, s>>>(
      reinterpret_cast<const float2*>(d_work), cells, d_kernel_re);
  CUDA_CHECK_LAUNCH("toeplitz kernel real_part");
}

}  // namespace radstream
