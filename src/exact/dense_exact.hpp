// The exact model as a stored matrix: G (samples x voxels, complex float, row-major) computed once from the
// same pair terms as the on-the-fly sums (exact_cpu.hpp, exact_cuda.hpp), then every forward (d = G x) and
// adjoint (x = G^H d) is a pass over memory instead of M x V sincos and sinc terms. This pays when an
// operator is applied many times and the matrix fits: seed 001's 64^2 case (M = 3,770, V = 4,096: 124 MB)
// applies F and F^H 17 times in 8 CG iterations, and its gradient model's sinc terms make every on-the-fly
// application cost as much as computing the matrix once. Products and sums run in double (exact products of
// the float entries) in a fixed order, so repeated applications give the same bits. The CPU class is the CUDA
// class's twin.
#pragma once
#include <complex>
#include <cstddef>
#include <vector>

#include "core/exact_model.hpp"
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
  // G^H G x with G x kept in double (the CUDA twin's fused pass).
  void normal(const cfloat* x, cfloat* z) override;

 private:
  std::size_t M_, V_;
  HostBuffer<cfloat> g_;
  std::vector<std::complex<double>> y_;  // G x in double, for normal()
};

// Computes the matrix with `source`'s kernels (accurate or fast trig, as source was made) on source's stream;
// source must outlive it. normal() is one pass over G (G^H G x with G x kept in double) for up to 4,096
// voxels, else forward() then adjoint(). Defined in CUDA builds only.
class DenseExactOperatorCuda final : public LinearOperator {
 public:
  // compute_now = false: allocate only; compute() fills the matrix (so a caller can time the two apart).
  explicit DenseExactOperatorCuda(ExactOperatorCuda& source, bool compute_now = true);
  ~DenseExactOperatorCuda() override;
  gpu::StreamRef stream() const override { return stream_; }
  void compute();
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;
  void normal(const cfloat* d_x, cfloat* d_z) override;

 private:
  ExactOperatorCuda& source_;
  gpu::StreamRef stream_;
  std::size_t M_, V_, ld_;
  int rows_ = 4, chunks_ = 1;  // the adjoint's row chunks (partial sums, added in a fixed order)
  int normal_rows_ = 0, normal_blocks_ = 0;  // the fused normal's rows per block and blocks (0: not fused)
  DeviceBuffer<cfloat> g_;
  DeviceBuffer<std::complex<double>> partials_;
};

}  // namespace radstream
