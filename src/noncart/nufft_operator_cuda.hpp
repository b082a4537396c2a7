// The non-uniform FFT as a linear operator on the GPU (2D): image [batch][N][N] <-> samples [batch][n], the
// same exact-NUDFT pair as NufftOperatorCpu (forward exp(-2 pi i k.p), adjoint exp(+2 pi i k.p), unscaled).
// forward: apodize + zero-pad -> cuFFT forward -> interp; adjoint: spread -> cuFFT inverse -> crop +
// deapodize. Enqueued on its stream, nothing allocated after construction. CUDA builds only.
#pragma once
#include <memory>

#include "fft/cufft_plan.hpp"
#include "linalg/linear_operator.hpp"
#include "noncart/nufft_plan_cuda.hpp"

namespace radstream {

class NufftOperatorCuda final : public LinearOperator {
 public:
  NufftOperatorCuda(int matrix, int batch, std::size_t points, const NufftKernel& kernel,
                    gpu::StreamRef stream);

  gpu::StreamRef stream() const override { return stream_; }
  // d_traj [points][2] on the device (kept by reference until the next call).
  void set_points(const float* d_traj);
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;
  NufftPlanCuda& plan() { return *plan_; }

 private:
  int N_, batch_;
  std::size_t points_;
  gpu::StreamRef stream_;
  std::unique_ptr<NufftPlanCuda> plan_;
  CufftPlan fft_;
  DeviceBuffer<int> d_src_;
  DeviceBuffer<float> d_factor_;
  DeviceBuffer<cfloat> d_grids_;
  bool points_set_ = false;
};

}  // namespace radstream
