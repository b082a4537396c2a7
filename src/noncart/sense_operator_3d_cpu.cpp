#include <fmt/format.h>

#include "core/error.hpp"
#include "noncart/sense_operator_3d.hpp"

namespace radstream {
namespace {

Extents volume(std::array<int, 3> m) {
  return Extents{std::size_t(m[2]), std::size_t(m[1]), std::size_t(m[0])};
}

}  // namespace

SenseOperator3dCpu::SenseOperator3dCpu(std::array<int, 3> matrix, int coils, std::size_t points,
                                       const NufftKernel& kernel)
    : LinearOperator(volume(matrix), Extents{std::size_t(coils), points}, Location::Host),
      coils_(coils),
      voxels_(std::size_t(matrix[0]) * matrix[1] * matrix[2]),
      nufft_(3, matrix, coils, points, kernel),
      coil_images_(Extents{std::size_t(coils), voxels_}) {
  if (coils < 1) throw ConfigError(fmt::format("sense 3d: {} coils", coils));
}

void SenseOperator3dCpu::set_maps(const cfloat* maps) {
  maps_ = maps;
}

void SenseOperator3dCpu::set_points(const float* traj) {
  nufft_.set_points(traj);
}

void SenseOperator3dCpu::forward(const cfloat* x, cfloat* y) {
  if (!maps_) throw InputError("sense 3d: set_maps() has not been called");
  cfloat* ci = coil_images_.data();
#pragma omp parallel for schedule(static)
  for (long i = 0; i < long(voxels_); ++i)
    for (int c = 0; c < coils_; ++c)
      ci[std::size_t(c) * voxels_ + i] = maps_[std::size_t(c) * voxels_ + i] * x[i];
  nufft_.forward(ci, y);
}

void SenseOperator3dCpu::adjoint(const cfloat* y, cfloat* x) {
  if (!maps_) throw InputError("sense 3d: set_maps() has not been called");
  cfloat* ci = coil_images_.data();
  nufft_.adjoint(y, ci);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < long(voxels_); ++i) {
    cfloat s(0.f, 0.f);
    for (int c = 0; c < coils_; ++c)
      s += std::conj(maps_[std::size_t(c) * voxels_ + i]) * ci[std::size_t(c) * voxels_ + i];
    x[i] = s;
  }
}

}  // namespace radstream
