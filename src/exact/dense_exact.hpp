// The exact model as a stored matrix: G (samples x voxels, complex float, row-major) computed once from the same
// pair terms as the on-the-fly sums (exact_cpu.hpp, exact_cuda.hpp), then every forward (d = G x) and adjoint
// (x = G^H d) is a pass over memory instead of M x V sincos and sinc terms. This pays when an operator is applied
// many times and the matrix fits: seed 001's 64^2 case (M = 3,770, V = 4,096: 124 MB) applies F and F^H 17
// times in 8 CG iterations, and its gradient model's sinc terms make every on-the-fly application cost as much
// as computing the matrix once. Products and sums run in double (exact products of the float entries) in a
// fixed order, so repeated applications give the same bits. The CPU class is the CUDA class's twin.
#pragma once
#include <complex>
#include <cstddef>

#include "exact/exact_model.hpp"
#include "gpu/handles.hpp"
#include "linalg/linear_operator.hpp"

namespace radstream {

class ExactOperatorCuda;

// Bytes of the matrix for a model (samples x voxels x 8; the GPU pads rows to an even length).
std::size_t exact_matrix_bytes(const ExactModel& model);

class DenseExactOperatorCpu final : public LinearOperator {
 public:
  explicit DenseExactOperatorCpu(const ExactModel& model);
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;

 private:
  std::size_t M_, V_;
  HostBuffer<cfloat> g_;
};

// Computes the matrix with `source`'s kernels (accurate or fast trig, as source was made) on source's stream.
// Defined in CUDA builds only.
class DenseExactOperatorCuda final : public LinearOperator {
 public:
  explicit DenseExactOperatorCuda(ExactOperatorCuda& source);
  ~DenseExactOperatorCuda() override;
  gpu::StreamRef stream() const override { return stream_; }
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;

 private:
  gpu::StreamRef stream_;
  std::size_t M_, V_, ld_;
  int rows_ = 4, chunks_ = 1;  // the adjoint's row chunks (partial sums, added in a fixed order)
  DeviceBuffer<cfloat> g_;
  DeviceBuffer<std::complex<double>> partials_;
};

}  // namespace radstream
