#include "linalg/conjugate_gradient.hpp"

#include <cmath>

#include "core/error.hpp"

namespace radstream {

namespace {
// Scalar slots: two alternating <r,r> (old/new swap by parity, no copies), <p,q>, <b,b>.
constexpr int kRr0 = 0, kRr1 = 1, kPq = 2, kBb = 3;
}  // namespace

ConjugateGradient::ConjugateGradient(std::size_t n, VectorOps& ops)
    : n_(n), ops_(ops), r_(n, ops.location()), p_(n, ops.location()), q_(n, ops.location()), t_(n, ops.location()) {}

void ConjugateGradient::apply(LinearOperator& a, LinearOperator* reg, const CgOptions& o, const cfloat* in,
                              cfloat* out) {
  a.normal(in, out);
  if (o.lambda != 0.0) ops_.axpy(out, float(o.lambda), in, n_);
  if (reg && o.mu != 0.0) {
    reg->normal(in, t_.data());
    ops_.axpy(out, float(o.mu), t_.data(), n_);
  }
}

CgReport ConjugateGradient::solve(LinearOperator& a, const cfloat* b, cfloat* x, const CgOptions& o,
                                  bool warm_start, LinearOperator* reg) {
  if (a.domain().size() != n_)
    throw InputError("cg: the operator's domain " + a.domain().str() + " does not hold " + std::to_string(n_) +
                     " unknowns");
  if (a.location() != ops_.location()) throw InputError("cg: the operator and the vectors live apart");
  if (reg && reg->domain().size() != n_) throw InputError("cg: the regularizer's domain does not match");
  if (o.max_iterations < 0) throw ConfigError("cg: max_iterations must be >= 0");
  cfloat* r = r_.data();
  cfloat* p = p_.data();
  cfloat* q = q_.data();
  if (warm_start) {
    apply(a, reg, o, x, r);  // r = M x0
    ops_.rsub(r, b, n_);     // r = b - M x0
  } else {
    ops_.zero(x, n_);
    ops_.copy(r, b, n_);
  }
  ops_.copy(p, r, n_);
  ops_.dot_re(b, b, n_, kBb);
  ops_.dot_re(r, r, n_, kRr0);
  CgReport rep;
  const bool check = o.tolerance > 0;
  double bb = 0;
  if (check) {
    bb = ops_.read(kBb);
    if (std::sqrt(ops_.read(kRr0)) <= o.tolerance * std::sqrt(bb)) {
      rep.residual = bb > 0 ? std::sqrt(ops_.read(kRr0) / bb) : 0.0;
      return rep;
    }
  }
  int it = 0;
  for (; it < o.max_iterations; ++it) {
    const int rr_old = it % 2 == 0 ? kRr0 : kRr1, rr_new = it % 2 == 0 ? kRr1 : kRr0;
    apply(a, reg, o, p, q);
    ops_.dot_re(p, q, n_, kPq);
    ops_.cg_step(x, r, p, q, n_, rr_old, kPq);
    ops_.dot_re(r, r, n_, rr_new);
    ops_.cg_direction(p, r, n_, rr_new, rr_old);
    if (check && std::sqrt(ops_.read(rr_new)) <= o.tolerance * std::sqrt(bb)) {
      ++it;
      break;
    }
  }
  rep.iterations = it;
  const int last = it % 2 == 0 ? kRr0 : kRr1;
  if (!check) bb = ops_.read(kBb);
  rep.residual = bb > 0 ? std::sqrt(std::max(0.0, ops_.read(last)) / bb) : 0.0;
  return rep;
}

}  // namespace radstream
