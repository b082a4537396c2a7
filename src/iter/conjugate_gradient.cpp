#include "iter/conjugate_gradient.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace radstream {

namespace {
// Scalar slots: two alternating <r,r> (old and new swap by parity, no copies), <p,q>, <b,b>.
constexpr int kRr0 = 0, kPq = 2, kBb = 3;
static_assert(kBb < ConjugateGradient::kFirstFreeSlot);
// A LinearOperator's normal as the solver applies it (a lambda of one reference: no allocation).
ConjugateGradient::Normal normal_of(LinearOperator& a) {
  return [&a](const cfloat* x, cfloat* z) { a.normal(x, z); };
}
}  // namespace

ConjugateGradient::ConjugateGradient(std::size_t n, VectorOps& ops, bool regularized)
    : n_(n),
      ops_(ops),
      r_(n, ops.location()),
      p_(n, ops.location()),
      q_(n, ops.location()),
      t_(regularized ? n : 0, ops.location()) {}

void ConjugateGradient::apply(const Normal& a, LinearOperator* reg, const CgOptions& o, const cfloat* in,
                              cfloat* out) {
  a(in, out);
  if (o.lambda != 0.0) ops_.axpy(out, float(o.lambda), in, n_);
  if (reg && o.mu != 0.0) {
    reg->normal(in, t_.data());
    ops_.axpy(out, float(o.mu), t_.data(), n_);
  }
}

void ConjugateGradient::check(LinearOperator& a, const CgOptions& o, LinearOperator* reg) const {
  if (a.domain().size() != n_)
    throw InputError("cg: the operator's domain " + a.domain().str() + " does not hold " +
                     std::to_string(n_) + " unknowns");
  if (a.location() != ops_.location()) throw InputError("cg: the operator and the vectors live apart");
  if (reg && reg->domain().size() != n_) throw InputError("cg: the regularizer's domain does not match");
  if (reg && o.mu != 0.0 && t_.size() != n_)
    throw ConfigError("cg: a regularizer was given to a solver made without one (regularized = false)");
  if (o.max_iterations < 0)
    throw ConfigError("cg: max_iterations = " + std::to_string(o.max_iterations) + " must be >= 0");
}

void ConjugateGradient::start(const Normal& a, const cfloat* b, cfloat* x, const CgOptions& o, bool warm,
                              LinearOperator* reg) {
  cfloat* r = r_.data();
  if (warm) {
    apply(a, reg, o, x, r);  // r = M x0
    ops_.rsub(r, b, n_);     // r = b - M x0
    ops_.copy(p_.data(), r, n_);
    ops_.dot_re(b, b, n_, kBb);
  } else {
    if (!o.add_to_x) ops_.zero(x, n_);
    ops_.cg_start(r, p_.data(), b, n_, kBb);  // r = p = b and <b, b> in one pass
  }
  // From zero r = b: its <r, r> is <b, b>, which iteration 0 reads from b's slot (a pass over r saved).
  first_rr_ = warm ? kRr0 : kBb;
  if (warm) ops_.dot_re(r, r, n_, kRr0);
}

int ConjugateGradient::rr_slot(int iterations) const {
  return iterations == 0 ? first_rr_ : iterations % 2 == 0 ? 0 : 1;
}

void ConjugateGradient::apply_pq(const Normal& a, const CgOptions& o, LinearOperator* reg) {
  if (o.lambda != 0.0 && !(reg && o.mu != 0.0)) {  // q = (A + lambda) p and <p, q> in one pass
    a(p_.data(), q_.data());
    ops_.axpy_dot(q_.data(), float(o.lambda), p_.data(), n_, kPq);
  } else {
    apply(a, reg, o, p_.data(), q_.data());
    ops_.dot_re(p_.data(), q_.data(), n_, kPq);
  }
}

void ConjugateGradient::iterate(const Normal& a, cfloat* x, const CgOptions& o, int it, LinearOperator* reg) {
  const int rr_old = rr_slot(it), rr_new = rr_slot(it + 1);
  // The direction from the last step's residual (p = r before the first): made here, at the start of the
  // iteration that uses it, so that a solve's last step leaves no direction nobody reads.
  if (it > 0) ops_.cg_direction(p_.data(), r_.data(), n_, rr_old, rr_slot(it - 1));
  apply_pq(a, o, reg);
  // The step and the new <r, r> in one pass (the first always steps; later ones are no-ops once converged
  // when the caller's rule is given).
  ops_.cg_step_norm(x, r_.data(), p_.data(), q_.data(), n_, rr_old, kPq, rr_new,
                    it == 0 ? -1.0 : o.converged_rr);
}

void ConjugateGradient::enqueue(LinearOperator& a, const cfloat* b, cfloat* x, const CgOptions& o, bool warm,
                                LinearOperator* reg) {
  check(a, o, reg);
  if (o.tolerance != 0.0) throw ConfigError("cg: enqueue() runs a fixed count; tolerance must be 0");
  const Normal m = normal_of(a);
  start(m, b, x, o, warm, reg);
  for (int it = 0; it < o.max_iterations; ++it) iterate(m, x, o, it, reg);
  last_iterations_ = o.max_iterations;
}

void ConjugateGradient::begin(LinearOperator& a, const cfloat* b, cfloat* x, const CgOptions& o, bool warm,
                              LinearOperator* reg) {
  check(a, o, reg);
  start(normal_of(a), b, x, o, warm, reg);
  last_iterations_ = 0;
}

void ConjugateGradient::step(LinearOperator& a, cfloat* x, const CgOptions& o, LinearOperator* reg) {
  iterate(normal_of(a), x, o, last_iterations_, reg);
  ++last_iterations_;
}

void ConjugateGradient::begin(const Normal& a, const cfloat* b, cfloat* x, const CgOptions& o, bool warm) {
  if (o.max_iterations < 0)
    throw ConfigError("cg: max_iterations = " + std::to_string(o.max_iterations) + " must be >= 0");
  start(a, b, x, o, warm, nullptr);
  last_iterations_ = 0;
}

void ConjugateGradient::step(const Normal& a, cfloat* x, const CgOptions& o) {
  iterate(a, x, o, last_iterations_, nullptr);
  ++last_iterations_;
}

void ConjugateGradient::capture(gpu::LoopGraphBuilder& graph, const Normal& a, const cfloat* b, cfloat* x,
                                const CgOptions& o, const CgStop& stop, bool reset_total,
                                const DeviceDeadline& deadline) {
  if (!ops_.device_loops()) throw ConfigError("cg: a device loop needs vectors on a GPU");
  if (o.max_iterations < 1)
    throw ConfigError("cg: a device loop runs at least one iteration (max_iterations = " +
                      std::to_string(o.max_iterations) + ")");
  // Iteration 0 writes its <r, r> to rr_slot(1); the loop then keeps the newest in that slot (cur) and the
  // one before in rr_slot(0) (prev), where each later step writes the newest before the control swaps them.
  const CgLoopSlots slots{rr_slot(1), 0, kBb, kCountSlot, kTotalSlot};
  static_assert(kCountSlot > kBb && kTotalSlot > kBb && kFirstFreeSlot > kTotalSlot);
  const gpu::LoopHandle loop = graph.new_loop();
  graph.add([&] {
    CgOptions first = o;
    first.converged_rr = -1.0;  // the loop stops itself: no step needs to turn itself off
    start(a, b, x, first, false, nullptr);
    iterate(a, x, first, 0, nullptr);
    ops_.cg_loop_control(loop, slots, stop, o.max_iterations, true, reset_total, deadline);
  });
  graph.add_loop(loop, [&] {
    ops_.cg_direction(p_.data(), r_.data(), n_, slots.cur, slots.prev);
    apply_pq(a, o, nullptr);
    ops_.cg_step_norm(x, r_.data(), p_.data(), q_.data(), n_, slots.cur, kPq, slots.prev, -1.0);
    ops_.cg_loop_control(loop, slots, stop, o.max_iterations, false, false, deadline);
  });
}

double ConjugateGradient::rhs_norm2() {
  return ops_.read(kBb);
}

double ConjugateGradient::residual() {
  double bb = 0, rr = 0;
  ops_.read2(kBb, rr_slot(last_iterations_), bb, rr);  // one wait
  return bb > 0 ? std::sqrt(std::max(0.0, rr) / bb) : 0.0;
}

CgReport ConjugateGradient::solve(LinearOperator& a, const cfloat* b, cfloat* x, const CgOptions& o,
                                  bool warm, LinearOperator* reg) {
  check(a, o, reg);
  CgReport rep;
  if (o.tolerance <= 0) {
    enqueue(a, b, x, o, warm, reg);
    rep.iterations = o.max_iterations;
    rep.residual = residual();
    return rep;
  }
  const Normal m = normal_of(a);
  start(m, b, x, o, warm, reg);
  const double bnorm = std::sqrt(ops_.read(kBb));
  int it = 0;
  while (std::sqrt(std::max(0.0, ops_.read(rr_slot(it)))) > o.tolerance * bnorm && it < o.max_iterations) {
    iterate(m, x, o, it, reg);
    ++it;
  }
  last_iterations_ = it;
  rep.iterations = it;
  rep.residual = residual();
  return rep;
}

}  // namespace radstream
