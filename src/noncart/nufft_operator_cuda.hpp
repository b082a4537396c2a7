// The non-uniform FFT as a linear operator on the GPU, in 2D (image [batch][N][N], NufftPlanCuda) or 3D
// (image [batch][Nz][Ny][Nx], NufftPlanCuda3d) <-> samples [batch][n]: the same exact-NUDFT pair as
// NufftOperatorCpu (forward exp(-2 pi i k.p), adjoint exp(+2 pi i k.p), unscaled). forward: apodize +
// zero-pad -> cuFFT forward -> interp, or in 2D on grids of 64..2048 points the custom engine's head that
// skips the padding (nufft_pad_fft_cuda.hpp) -> interp; adjoint: spread -> cuFFT inverse -> crop +
// deapodize. Enqueued on its stream, nothing allocated after construction. CUDA builds only.
#pragma once
#include <array>
#include <memory>

#include "fft/cufft_plan.hpp"
#include "linalg/linear_operator.hpp"
#include "noncart/nufft_pad_fft_cuda.hpp"
#include "noncart/nufft_plan_cuda.hpp"
#include "noncart/nufft_plan_cuda3d.hpp"

namespace radstream {

class NufftOperatorCuda final : public LinearOperator {
 public:
  // 2D, matrix N x N.
  NufftOperatorCuda(int matrix, int batch, std::size_t points, const NufftKernel& kernel,
                    gpu::StreamRef stream);
  // dims 2 (matrix {N, N, 1}: the 2D plan) or 3 (matrix {Nx, Ny, Nz}, each even: the 3D plan).
  NufftOperatorCuda(int dims, std::array<int, 3> matrix, int batch, std::size_t points,
                    const NufftKernel& kernel, gpu::StreamRef stream);

  gpu::StreamRef stream() const override { return stream_; }
  // d_traj [points][dims] on the device (kept by reference until the next call).
  void set_points(const float* d_traj);
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;
  NufftPlanCuda& plan();  // the 2D plan; throws ConfigError for a 3D operator
  // The forward direction through cuFFT even where the custom head applies (its parity test).
  void set_cufft_forward(bool on) { cufft_forward_ = on; }
  bool custom_forward() const { return head_ && !cufft_forward_; }
  int dims() const { return dims_; }

 private:
  int dims_, batch_;
  std::array<int, 3> N_{1, 1, 1}, G_{1, 1, 1};
  std::size_t points_;
  gpu::StreamRef stream_;
  std::unique_ptr<NufftPlanCuda> plan_;
  std::unique_ptr<NufftPlanCuda3d> plan3_;
  std::unique_ptr<PadFftCuda> head_;  // 2D forward on the custom engine, where the grid size allows
  bool cufft_forward_ = false;
  CufftPlan fft_;
  DeviceBuffer<int> d_src_;
  DeviceBuffer<float> d_factor_;
  DeviceBuffer<cfloat> d_grids_;
  bool points_set_ = false;
};

}  // namespace radstream
