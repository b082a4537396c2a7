// NLINV on the CPU (nlinv/nlinv_solver.hpp): NlinvModelCpu, and the frame gridded by NufftOperatorCpu on the
// model's G x G grid (kernel width 6, ~1e-5).
#pragma once
#include <memory>

#include "nlinv/nlinv_model_cpu.hpp"
#include "nlinv/nlinv_solver.hpp"
#include "noncart/nufft_operator_cpu.hpp"

namespace radstream {

class NlinvCpu final : public NlinvSolver {
 public:
  // matrix N, coils J, points: samples per frame (spokes x samples); threads 0 = all.
  NlinvCpu(int matrix, int coils, std::size_t points, const NlinvParams& p, int threads,
           FftPlanner planner = FftPlanner::Estimate);
  // traj [points][2] in cycles per pixel of the N x N image; samples [coils][points]; host arrays.
  void grid_frame(const float* traj, const cfloat* samples) override;

 private:
  int n_, j_;
  std::unique_ptr<NufftOperatorCpu> nufft_, psf_;
  HostBuffer<cfloat> ones_, psf_image_;
};

}  // namespace radstream
