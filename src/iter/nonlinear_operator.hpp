// A nonlinear forward operator for Gauss-Newton solvers (BART's nlop, as iter4_irgnm sees it): a map F from
// a domain vector x to a codomain (data) vector, both complex arrays at one location, linearized at a point
// on demand. What the iteratively regularized Gauss-Newton method (iter/irgnm.hpp) needs of it is the data
// residual and its back-projection at the point, and the normal operator of the derivative there; the
// derivative itself is a LinearOperator (for the adjoint test and finite-difference checks).
//
// The least-squares problem may carry a fixed, non-negative data weighting W (the identity when there is
// none): NLINV's data are gridded, y = A^H s, and its W is the transfer function A^H A on the grid, so that
// its residual is y - W G(x) and its normal operator G'^H W G', exactly the Gauss-Newton step on the raw
// samples (nlinv/nlinv_model.hpp). An operator without a weighting leaves normal() to the derivative's.
#pragma once
#include <cstddef>

#include "core/buffer.hpp"
#include "gpu/handles.hpp"
#include "linalg/linear_operator.hpp"

namespace radstream {

class NonlinearOperator {
 public:
  virtual ~NonlinearOperator() = default;
  virtual Location location() const = 0;
  // Device operators: the stream their work is enqueued on; nullptr on the host.
  virtual gpu::StreamRef stream() const { return nullptr; }
  virtual std::size_t domain_size() const = 0;
  virtual std::size_t codomain_size() const = 0;

  // Sets the point of linearization x [domain_size()]; what follows is taken at it.
  virtual void linearize(const cfloat* x) = 0;
  // The Newton step's gradient at the point: r [codomain_size()] = the data y's residual (y - W F(x)) and
  // b [domain_size()] = F'(x)^H r.
  virtual void gradient(const cfloat* y, cfloat* r, cfloat* b) = 0;
  // out [domain_size()] = F'(x)^H W F'(x) v.
  virtual void normal(const cfloat* v, cfloat* out) { derivative().normal(v, out); }
  // F'(x) at the point, as a linear operator (valid until the operator is destroyed; it follows linearize()).
  virtual LinearOperator& derivative() = 0;
};

}  // namespace radstream
