// The exact model's sums on the host (OpenMP over voxels for the adjoint and Q, over samples for the
// forward), in float (the CUDA kernels' twin: the same reductions and phase reduction) or in double (the
// reference every test compares against). The model must be filled() (see exact_model.hpp). Coils: d holds
// `coils` blocks of samples() values and x `coils` blocks of voxels() values.
#pragma once
#include <complex>

#include "core/exact_model.hpp"
#include "linalg/linear_operator.hpp"

namespace radstream {

template <class Real>
void exact_adjoint_cpu(const ExactModel& m, const std::complex<Real>* d, std::complex<Real>* x);
template <class Real>
void exact_forward_cpu(const ExactModel& m, const std::complex<Real>* x, std::complex<Real>* d);
// Q on m.grid.q_grid() (2N per axis) with sample weights w (nullptr: all 1; seed 000's |phi_m|^2).
template <class Real>
void exact_q_cpu(const ExactModel& m, const float* w, std::complex<Real>* q);

// The model's matrix G (row-major [samples][voxels]: the forward is d = G x, the adjoint x = G^H d), each
// entry the same pair term as the sums above (instantiated for float, the stored matrix's precision).
template <class Real>
void exact_matrix_cpu(const ExactModel& m, std::complex<Real>* g);

// F (forward) and F^H (adjoint) of the model as a host operator in float: domain the voxels
// ([n0 n1 n2] of the grid), codomain the samples ([M]).
class ExactOperatorCpu final : public LinearOperator {
 public:
  explicit ExactOperatorCpu(const ExactModel& model);
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;
  const ExactModel& model() const { return m_; }

 private:
  ExactModel m_;
};

}  // namespace radstream
