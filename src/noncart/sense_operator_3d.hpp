// The SENSE encoding operator in 3D (a stack of stars, a 3D radial kooshball) on either backend:
//   forward  y_c = NUFFT3(S_c x)                 image [Nz][Ny][Nx] -> samples [coils][points]
//   adjoint  x   = sum_c conj(S_c) NUFFT3^H(y_c)
// with the unscaled exact-NUDFT pair of the 3D NUFFT operators (NufftOperatorCpu with dims 3 and
// NufftOperatorCuda's 3D plan), so that CG-SENSE (iter/conjugate_gradient.hpp) solves 3D frames on the CPU
// and on the GPU with the same arithmetic. normal() is forward then adjoint (no 3D Toeplitz kernel yet).
// Maps [coils][Nz][Ny][Nx] are kept by reference; nothing is allocated after construction.
#pragma once
#include <array>
#include <memory>

#include "linalg/linear_operator.hpp"
#include "noncart/nufft_operator_cpu.hpp"

namespace radstream {

class NufftOperatorCuda;

class SenseOperator3dCpu final : public LinearOperator {
 public:
  // matrix: {Nx, Ny, Nz}, each even.
  SenseOperator3dCpu(std::array<int, 3> matrix, int coils, std::size_t points, const NufftKernel& kernel);
  void set_maps(const cfloat* maps);
  // traj [points][3] in cycles per pixel.
  void set_points(const float* traj);
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;

 private:
  int coils_;
  std::size_t voxels_;
  const cfloat* maps_ = nullptr;
  NufftOperatorCpu nufft_;
  HostBuffer<cfloat> coil_images_;  // [coils][voxels]
};

// The GPU twin (CUDA builds only: defined in sense_operator_3d_cuda.cu; callers guard with
// RADSTREAM_HAVE_CUDA, as for SenseOperatorCuda).
class SenseOperator3dCuda final : public LinearOperator {
 public:
  SenseOperator3dCuda(std::array<int, 3> matrix, int coils, std::size_t points, const NufftKernel& kernel,
                      gpu::StreamRef stream);
  ~SenseOperator3dCuda() override;
  gpu::StreamRef stream() const override { return stream_; }
  // d_maps [coils][voxels] on the device.
  void set_maps(const cfloat* d_maps);
  // d_traj [points][3] on the device (kept by reference).
  void set_points(const float* d_traj);
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;

 private:
  int coils_;
  std::size_t voxels_;
  gpu::StreamRef stream_;
  const cfloat* d_maps_ = nullptr;
  std::unique_ptr<NufftOperatorCuda> nufft_;
  DeviceBuffer<cfloat> d_coil_images_;
};

}  // namespace radstream
