// F^H F of a field-free exact model as a convolution with Q on the 2N grid (seed 000's point: Q depends on
// the trajectory only, so it is computed once and every CG iteration costs two FFTs of the 2N grid instead of
// two direct sums): pad x to 2N along every axis with n > 1, FFT, multiply by FFT(Q) / L, inverse FFT, crop.
// forward() and adjoint() are the wrapped operator's. q is Q on grid.q_grid() (displacements -n..n-1, as
// exact_q_cpu / ExactOperatorCuda::q write it). Nothing is allocated after construction.
#pragma once
#include <memory>
#include <vector>

#include "core/exact_model.hpp"
#include "fft/cufft_plan.hpp"
#include "fft/fftw_plan.hpp"
#include "linalg/linear_operator.hpp"

namespace radstream {

// The FFT extents of the 2N grid (axes with n > 1, slowest first) and its size.
std::vector<int> toeplitz_dims(const ExactGrid& grid);

class ToeplitzNormalCpu final : public LinearOperator {
 public:
  ToeplitzNormalCpu(std::shared_ptr<LinearOperator> op, const ExactGrid& grid, const cfloat* q);
  void forward(const cfloat* x, cfloat* y) override { op_->forward(x, y); }
  void adjoint(const cfloat* y, cfloat* x) override { op_->adjoint(y, x); }
  void normal(const cfloat* x, cfloat* z) override;

 private:
  std::shared_ptr<LinearOperator> op_;
  ExactGrid grid_;
  FftwPlan fwd_, inv_;
  HostBuffer<cfloat> qhat_, pad_;
};

// CUDA builds only (else the constructor throws). d_q on the device.
class ToeplitzNormalCuda final : public LinearOperator {
 public:
  ToeplitzNormalCuda(std::shared_ptr<LinearOperator> op, const ExactGrid& grid, const cfloat* d_q,
                     gpu::StreamRef stream);
  gpu::StreamRef stream() const override { return stream_; }
  void forward(const cfloat* x, cfloat* y) override { op_->forward(x, y); }
  void adjoint(const cfloat* y, cfloat* x) override { op_->adjoint(y, x); }
  void normal(const cfloat* d_x, cfloat* d_z) override;

 private:
  std::shared_ptr<LinearOperator> op_;
  ExactGrid grid_;
  gpu::StreamRef stream_;
  CufftPlan fft_;
  DeviceBuffer<cfloat> qhat_, pad_;
};

}  // namespace radstream
