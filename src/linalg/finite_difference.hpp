// Periodic forward differences of an N x N image (seed 001's smoothness penalty C): forward
//   D x = [x(p + e_x) - x(p), x(p + e_y) - x(p)]   [N][N] -> [2][N][N]
// and its adjoint (minus the backward-difference divergence); D^H D is the 5-point Laplacian. On the host or
// the device (the CUDA twin is finite_difference_cuda.cu; CUDA builds only).
#pragma once
#include <memory>

#include "linalg/linear_operator.hpp"

namespace radstream {

class FiniteDifferenceCpu final : public LinearOperator {
 public:
  explicit FiniteDifferenceCpu(int matrix);
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;

 private:
  int N_;
};

class FiniteDifferenceCuda final : public LinearOperator {
 public:
  FiniteDifferenceCuda(int matrix, gpu::StreamRef stream);
  gpu::StreamRef stream() const override { return stream_; }
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;

 private:
  int N_;
  gpu::StreamRef stream_;
};

}  // namespace radstream
