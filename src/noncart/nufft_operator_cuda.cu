#include <string>

#include "gpu/cuda_check.cuh"
#include "noncart/nufft_operator_cuda.hpp"

namespace radstream {
namespace {

struct Axes {
  int Nx, Ny, Nz, Gx, Gy, Gz;
};

// One thread per image pixel and batch item (blockIdx.z = coil * Nz + z): grid[src_z][src_y][src_x] =
// img[z][y][x] * f_x f_y f_z; the rest of the grid is cleared before. src and f hold the x, y and z entries
// one after the other (2D: Nz = 1, src_z = 0, f_z = 1).
__global__ void pad_apodize(const float2* __restrict__ img, Axes a, const int* __restrict__ src,
                            const float* __restrict__ f, float2* __restrict__ grid) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  const int z = int(blockIdx.z) % a.Nz, c = int(blockIdx.z) / a.Nz;
  if (x >= a.Nx) return;
  const int oy = a.Nx, oz = a.Nx + a.Ny;
  const float2 v = img[((size_t(c) * a.Nz + z) * a.Ny + y) * a.Nx + x];
  const float s = f[x] * f[oy + y] * f[oz + z];
  grid[((size_t(c) * a.Gz + src[oz + z]) * a.Gy + src[oy + y]) * a.Gx + src[x]] =
      make_float2(v.x * s, v.y * s);
}

__global__ void crop_deapodize(const float2* __restrict__ grid, Axes a, const int* __restrict__ src,
                               const float* __restrict__ f, float2* __restrict__ img) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  const int z = int(blockIdx.z) % a.Nz, c = int(blockIdx.z) / a.Nz;
  if (x >= a.Nx) return;
  const int oy = a.Nx, oz = a.Nx + a.Ny;
  const float2 v = grid[((size_t(c) * a.Gz + src[oz + z]) * a.Gy + src[oy + y]) * a.Gx + src[x]];
  const float s = f[x] * f[oy + y] * f[oz + z];
  img[((size_t(c) * a.Nz + z) * a.Ny + y) * a.Nx + x] = make_float2(v.x * s, v.y * s);
}

Extents image_extents(int dims, std::array<int, 3> m, int batch) {
  if (dims == 3) return Extents{std::size_t(batch), std::size_t(m[2]), std::size_t(m[1]), std::size_t(m[0])};
  return Extents{std::size_t(batch), std::size_t(m[1]), std::size_t(m[0])};
}

}  // namespace

NufftOperatorCuda::NufftOperatorCuda(int matrix, int batch, std::size_t points, const NufftKernel& kernel,
                                     gpu::StreamRef stream)
    : NufftOperatorCuda(2, {matrix, matrix, 1}, batch, points, kernel, stream) {}

NufftOperatorCuda::NufftOperatorCuda(int dims, std::array<int, 3> matrix, int batch, std::size_t points,
                                     const NufftKernel& kernel, gpu::StreamRef stream)
    : LinearOperator(image_extents(dims, matrix, batch), Extents{std::size_t(batch), points},
                     Location::Device),
      dims_(dims),
      batch_(batch),
      points_(points),
      stream_(stream) {
  if (dims != 2 && dims != 3)
    throw ConfigError("nufft: dims = " + std::to_string(dims) + " must be 2 or 3 on the GPU");
  if (dims == 2 && matrix[0] != matrix[1])
    throw ConfigError("nufft: the 2D GPU operator takes a square matrix, not " + std::to_string(matrix[0]) +
                      " x " + std::to_string(matrix[1]));
  for (int a = 0; a < dims; ++a) {
    if (matrix[a] < 2 || matrix[a] % 2)
      throw ConfigError("nufft: matrix extent " + std::to_string(matrix[a]) + " on axis " +
                        std::to_string(a) + " must be even and >= 2");
    N_[a] = matrix[a];
    G_[a] = oversampled_grid_size(matrix[a], kernel.oversampling);
  }
  const KaiserBesselLut* lut = nullptr;
  if (dims == 2) {  // (the forward head on the custom FFT engine is made below, from the apodization)
    plan_ = std::make_unique<NufftPlanCuda>(G_[0], kernel, points, stream);
    fft_ = CufftPlan({G_[1], G_[0]}, batch, stream);
    lut = &plan_->lut();
  } else {
    plan3_ = std::make_unique<NufftPlanCuda3d>(G_, kernel, points, stream);
    fft_ = CufftPlan({G_[2], G_[1], G_[0]}, batch, stream);
    lut = &plan3_->lut();
  }
  std::vector<int> src;
  std::vector<float> factor;
  for (int a = 0; a < 3; ++a) {
    if (a < dims) {
      const AxisApodization ap = make_axis_apodization(N_[a], G_[a], *lut);
      // square: both axes' apodization is ap; the head's tiled grid is for the interp of W <= 8
      if (dims == 2 && a == 0 && PadFftCuda::supports(G_[0]) && kernel.width <= 8)
        head_ = std::make_unique<PadFftCuda>(N_[0], G_[0], batch, ap, stream);
      src.insert(src.end(), ap.src.begin(), ap.src.end());
      factor.insert(factor.end(), ap.factor.begin(), ap.factor.end());
    } else {  // the axis a 2D operator does not have
      src.push_back(0);
      factor.push_back(1.f);
    }
  }
  d_src_ = DeviceBuffer<int>(Extents{src.size()});
  d_factor_ = DeviceBuffer<float>(Extents{factor.size()});
  gpu::copy_to_device(d_src_.data(), src.data(), src.size() * sizeof(int), stream);
  gpu::copy_to_device(d_factor_.data(), factor.data(), factor.size() * sizeof(float), stream);
  d_grids_ = DeviceBuffer<cfloat>(
      Extents{std::size_t(batch), std::size_t(G_[2]), std::size_t(G_[1]), std::size_t(G_[0])});
  gpu::synchronize(stream);
}

NufftPlanCuda& NufftOperatorCuda::plan() {
  if (!plan_) throw ConfigError("nufft: plan() is the 2D plan; this operator is 3D");
  return *plan_;
}

void NufftOperatorCuda::set_points(const float* d_traj) {
  if (plan_)
    plan_->set_points(d_traj, points_);
  else
    plan3_->set_points(d_traj, points_);
  points_set_ = true;
}

void NufftOperatorCuda::forward(const cfloat* d_x, cfloat* d_y) {
  if (!points_set_) throw InputError("nufft: set_points() has not been called");
  auto stream = static_cast<cudaStream_t>(stream_);
  if (custom_forward()) {
    head_->run(d_x, d_grids_.data());
  } else {
    CUDA_CHECK(cudaMemsetAsync(d_grids_.data(), 0, d_grids_.size() * sizeof(cfloat), stream));
    const Axes a{N_[0], N_[1], N_[2], G_[0], G_[1], G_[2]};
    const dim3 blocks(unsigned((N_[0] + 127) / 128), unsigned(N_[1]), unsigned(N_[2] * batch_));
    pad_apodize<<<blocks, 128, 0, stream>>>(reinterpret_cast<const float2*>(d_x), a, d_src_.data(),
                                            d_factor_.data(), reinterpret_cast<float2*>(d_grids_.data()));
    CUDA_CHECK_LAUNCH("pad_apodize");
    fft_.execute(d_grids_.data(), FftDirection::Forward);
  }
  if (plan_)
    plan_->interp(d_grids_.data(), d_y, batch_, custom_forward());  // the head writes tiles
  else
    plan3_->interp(d_grids_.data(), d_y, batch_);
}

void NufftOperatorCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  if (!points_set_) throw InputError("nufft: set_points() has not been called");
  auto stream = static_cast<cudaStream_t>(stream_);
  if (plan_)
    plan_->spread(d_y, d_grids_.data(), batch_);
  else
    plan3_->spread(d_y, d_grids_.data(), batch_);
  fft_.execute(d_grids_.data(), FftDirection::Inverse);
  const Axes a{N_[0], N_[1], N_[2], G_[0], G_[1], G_[2]};
  const dim3 blocks(unsigned((N_[0] + 127) / 128), unsigned(N_[1]), unsigned(N_[2] * batch_));
  crop_deapodize<<<blocks, 128, 0, stream>>>(reinterpret_cast<const float2*>(d_grids_.data()), a,
                                             d_src_.data(), d_factor_.data(), reinterpret_cast<float2*>(d_x));
  CUDA_CHECK_LAUNCH("crop_deapodize");
}

}  // namespace radstream
