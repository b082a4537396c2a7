// The adjoint test every operator passes (BART's linop_test_adjoint): for random x and y,
// <A x, y> = <x, A^H y>. Works on host and device operators (the vectors are made on the host, moved to the
// operator's location and the products brought back; sums in double).
#pragma once
#include <complex>

#include "linalg/linear_operator.hpp"

namespace radstream {

struct AdjointCheck {
  std::complex<double> lhs;   // <A x, y>
  std::complex<double> rhs;   // <x, A^H y>
  double relative_error = 0;  // |lhs - rhs| / max(|lhs|, |rhs|)
};

AdjointCheck check_adjoint(LinearOperator& op, unsigned seed = 1);

}  // namespace radstream
