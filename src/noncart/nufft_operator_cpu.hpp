// The non-uniform FFT as a linear operator on the CPU: image [batch][(Nz)][Ny][Nx] <-> samples [batch][n].
//   forward  y_j = sum_p x(p) exp(-2 pi i k_j . p)   (interp after FFT after apodize + zero-pad)
//   adjoint  x(p) = sum_j y_j exp(+2 pi i k_j . p)   (spread, inverse FFT, crop + deapodize)
// p = pixel index - N/2 per axis, k_j in cycles per pixel: the exact NUDFT pair, unscaled, approximated to
// the kernel's accuracy (W 6, sigma 2: ~1e-5). set_points() once per trajectory.
#pragma once
#include <array>
#include <memory>

#include "fft/fftw_plan.hpp"
#include "linalg/linear_operator.hpp"
#include "noncart/nufft_plan_cpu.hpp"

namespace radstream {

class NufftOperatorCpu final : public LinearOperator {
 public:
  // matrix: image extents per axis, x first (N even); points: samples per batch item.
  NufftOperatorCpu(int dims, std::array<int, 3> matrix, int batch, std::size_t points,
                   const NufftKernel& kernel, FftPlanner planner = FftPlanner::Estimate, int threads = 0);

  // traj [points][dims] in cycles per pixel.
  void set_points(const float* traj);
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;
  const NufftPlanCpu& plan() const { return *plan_; }

 private:
  int dims_, batch_;
  std::array<int, 3> matrix_{1, 1, 1};
  std::size_t points_, image_size_ = 1;
  std::unique_ptr<NufftPlanCpu> plan_;
  std::array<AxisApodization, 3> apod_;
  FftwPlan fwd_, inv_;
  HostBuffer<cfloat> grids_;
};

}  // namespace radstream
