// SenseOperator3dCuda (sense_operator_3d.hpp): the coil expansion and the conjugate-map sum as one kernel
// each around the 3D NUFFT operator.
#include "gpu/cuda_check.cuh"
#include "noncart/nufft_operator_cuda.hpp"
#include "noncart/sense_operator_3d.hpp"

namespace radstream {
namespace {

__global__ void expand_maps(const float2* __restrict__ x, const float2* __restrict__ maps, int coils,
                            long voxels, float2* __restrict__ out) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= voxels) return;
  const float2 v = x[i];
  for (int c = 0; c < coils; ++c) {
    const float2 s = maps[size_t(c) * voxels + i];
    out[size_t(c) * voxels + i] = make_float2(s.x * v.x - s.y * v.y, s.x * v.y + s.y * v.x);
  }
}

__global__ void sum_conj_maps(const float2* __restrict__ in, const float2* __restrict__ maps, int coils,
                              long voxels, float2* __restrict__ x) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= voxels) return;
  float2 acc = make_float2(0.f, 0.f);
  for (int c = 0; c < coils; ++c) {
    const float2 s = maps[size_t(c) * voxels + i], v = in[size_t(c) * voxels + i];
    acc.x += s.x * v.x + s.y * v.y;
    acc.y += s.x * v.y - s.y * v.x;
  }
  x[i] = acc;
}

Extents volume(std::array<int, 3> m) {
  return Extents{std::size_t(m[2]), std::size_t(m[1]), std::size_t(m[0])};
}

}  // namespace

SenseOperator3dCuda::SenseOperator3dCuda(std::array<int, 3> matrix, int coils, std::size_t points,
                                         const NufftKernel& kernel, gpu::StreamRef stream)
    : LinearOperator(volume(matrix), Extents{std::size_t(coils), points}, Location::Device),
      coils_(coils),
      voxels_(std::size_t(matrix[0]) * matrix[1] * matrix[2]),
      stream_(stream),
      nufft_(std::make_unique<NufftOperatorCuda>(3, matrix, coils, points, kernel, stream)),
      d_coil_images_(Extents{std::size_t(coils), voxels_}) {}

SenseOperator3dCuda::~SenseOperator3dCuda() = default;

void SenseOperator3dCuda::set_maps(const cfloat* d_maps) {
  d_maps_ = d_maps;
}

void SenseOperator3dCuda::set_points(const float* d_traj) {
  nufft_->set_points(d_traj);
}

void SenseOperator3dCuda::forward(const cfloat* d_x, cfloat* d_y) {
  if (!d_maps_) throw InputError("sense 3d: set_maps() has not been called");
  auto stream = static_cast<cudaStream_t>(stream_);
  expand_maps<<<unsigned((voxels_ + 255) / 256), 256, 0, stream>>>(
      reinterpret_cast<const float2*>(d_x), reinterpret_cast<const float2*>(d_maps_), coils_, long(voxels_),
      reinterpret_cast<float2*>(d_coil_images_.data()));
  CUDA_CHECK_LAUNCH("expand_maps");
  nufft_->forward(d_coil_images_.data(), d_y);
}

void SenseOperator3dCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  if (!d_maps_) throw InputError("sense 3d: set_maps() has not been called");
  auto stream = static_cast<cudaStream_t>(stream_);
  nufft_->adjoint(d_y, d_coil_images_.data());
  sum_conj_maps<<<unsigned((voxels_ + 255) / 256), 256, 0, stream>>>(
      reinterpret_cast<const float2*>(d_coil_images_.data()), reinterpret_cast<const float2*>(d_maps_),
      coils_, long(voxels_), reinterpret_cast<float2*>(d_x));
  CUDA_CHECK_LAUNCH("sum_conj_maps");
}

}  // namespace radstream
