#include "gpu/cuda_check.cuh"
#include "noncart/nufft_operator_cuda.hpp"

namespace radstream {
namespace {

// One thread per image pixel and batch item: grid[src[y]][src[x]] = img[y][x] * f[y] f[x]; the rest of the
// grid is cleared before.
__global__ void pad_apodize(const float2* __restrict__ img, int N, int G, int batch,
                            const int* __restrict__ src, const float* __restrict__ f,
                            float2* __restrict__ grid) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  const int c = blockIdx.z;
  if (x >= N || c >= batch) return;
  const float2 v = img[(size_t(c) * N + y) * N + x];
  const float s = f[y] * f[x];
  grid[(size_t(c) * G + src[y]) * G + src[x]] = make_float2(v.x * s, v.y * s);
}

__global__ void crop_deapodize(const float2* __restrict__ grid, int N, int G, int batch,
                               const int* __restrict__ src, const float* __restrict__ f,
                               float2* __restrict__ img) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  const int c = blockIdx.z;
  if (x >= N || c >= batch) return;
  const float2 v = grid[(size_t(c) * G + src[y]) * G + src[x]];
  const float s = f[y] * f[x];
  img[(size_t(c) * N + y) * N + x] = make_float2(v.x * s, v.y * s);
}

}  // namespace

NufftOperatorCuda::NufftOperatorCuda(int matrix, int batch, std::size_t points, const NufftKernel& kernel,
                                     gpu::StreamRef stream)
    : LinearOperator(Extents{std::size_t(batch), std::size_t(matrix), std::size_t(matrix)},
                     Extents{std::size_t(batch), points}, Location::Device),
      N_(matrix),
      batch_(batch),
      points_(points),
      stream_(stream) {
  if (matrix < 2 || matrix % 2)
    throw ConfigError("nufft: matrix " + std::to_string(matrix) + " must be even");
  const int G = oversampled_grid_size(matrix, kernel.oversampling);
  plan_ = std::make_unique<NufftPlanCuda>(G, kernel, points, stream);
  fft_ = CufftPlan({G, G}, batch, stream);
  const AxisApodization a = make_axis_apodization(matrix, G, plan_->lut());
  d_src_ = DeviceBuffer<int>(Extents{std::size_t(matrix)});
  d_factor_ = DeviceBuffer<float>(Extents{std::size_t(matrix)});
  gpu::copy_to_device(d_src_.data(), a.src.data(), a.src.size() * sizeof(int), stream);
  gpu::copy_to_device(d_factor_.data(), a.factor.data(), a.factor.size() * sizeof(float), stream);
  d_grids_ = DeviceBuffer<cfloat>(Extents{std::size_t(batch), std::size_t(G), std::size_t(G)});
  gpu::synchronize(stream);
}

void NufftOperatorCuda::set_points(const float* d_traj) {
  plan_->set_points(d_traj, points_);
  points_set_ = true;
}

void NufftOperatorCuda::forward(const cfloat* d_x, cfloat* d_y) {
  if (!points_set_) throw InputError("nufft: set_points() has not been called");
  auto stream = static_cast<cudaStream_t>(stream_);
  const int G = plan_->grid();
  CUDA_CHECK(cudaMemsetAsync(d_grids_.data(), 0, d_grids_.size() * sizeof(cfloat), stream));
  const dim3 blocks(unsigned((N_ + 127) / 128), unsigned(N_), unsigned(batch_));
  pad_apodize<<<blocks, 128, 0, stream>>>(reinterpret_cast<const float2*>(d_x), N_, G, batch_, d_src_.data(),
                                          d_factor_.data(), reinterpret_cast<float2*>(d_grids_.data()));
  CUDA_CHECK_LAUNCH("pad_apodize");
  fft_.execute(d_grids_.data(), FftDirection::Forward);
  plan_->interp(d_grids_.data(), d_y, batch_);
}

void NufftOperatorCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  if (!points_set_) throw InputError("nufft: set_points() has not been called");
  auto stream = static_cast<cudaStream_t>(stream_);
  const int G = plan_->grid();
  plan_->spread(d_y, d_grids_.data(), batch_);
  fft_.execute(d_grids_.data(), FftDirection::Inverse);
  const dim3 blocks(unsigned((N_ + 127) / 128), unsigned(N_), unsigned(batch_));
  crop_deapodize<<<blocks, 128, 0, stream>>>(reinterpret_cast<const float2*>(d_grids_.data()), N_, G, batch_,
                                             d_src_.data(), d_factor_.data(), reinterpret_cast<float2*>(d_x));
  CUDA_CHECK_LAUNCH("crop_deapodize");
}

}  // namespace radstream
