#include "nlinv/irgnm.hpp"

#include <cmath>

#include "nlinv/located_buffer.hpp"

namespace radstream {

namespace {
enum Slot { kBB = 0, kRR = 1, kRRNew = 2, kPQ = 3, kRes = 4 };

}  // namespace

struct Irgnm::Vectors {
  LocatedBuffer r_data, b, h, r, p, ap;
  Vectors(std::size_t n, std::size_t m, Location loc)
      : r_data(m, loc), b(n, loc), h(n, loc), r(n, loc), p(n, loc), ap(n, loc) {}
};

Irgnm::Irgnm(NlinvModel& model, std::unique_ptr<VectorOps> ops)
    : model_(model),
      ops_(std::move(ops)),
      v_(std::make_unique<Vectors>(model.unknowns(), model.data_size(), model.location())) {}

Irgnm::~Irgnm() = default;

int Irgnm::cg(double alpha, int max_iter, const cfloat* b) {
  const std::size_t n = model_.unknowns();
  VectorOps& o = *ops_;
  cfloat *h = v_->h.data(), *r = v_->r.data(), *p = v_->p.data(), *ap = v_->ap.data();
  o.zero(h, n);
  o.copy(r, b, n);  // r = b - A 0
  o.copy(p, b, n);
  o.dot_re(b, b, n, kRR);
  const double bb = o.read(kRR);
  const double eps = 0.01 * bb;  // BART's legacy rule: ||r|| <= (cgtol ||b||)^2, cgtol = 0.1
  if (bb == 0) return 0;
  int it = 0;
  int rr = kRR, rr_new = kRRNew;
  while (it < max_iter) {
    model_.normal(p, ap);
    o.axpy(ap, float(alpha), p, n);
    o.dot_re(p, ap, n, kPQ);
    o.cg_step(h, r, p, ap, n, rr, kPQ);
    o.dot_re(r, r, n, rr_new);
    ++it;
    const double rs = o.read(rr_new);
    if (rs <= eps * eps) break;
    o.cg_direction(p, r, n, rr_new, rr);
    std::swap(rr, rr_new);
  }
  return it;
}

IrgnmReport Irgnm::solve(const NlinvParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y) {
  IrgnmReport rep;
  const std::size_t n = model_.unknowns(), m = model_.data_size();
  VectorOps& o = *ops_;
  double alpha = 1.0;
  for (int step = 0; step < p.newton; ++step) {
    model_.linearize(x);
    model_.value(v_->r_data.data());
    o.rsub(v_->r_data.data(), y, m);  // r = y - F(x)
    o.dot_re(v_->r_data.data(), v_->r_data.data(), m, kRes);
    model_.derivative_adjoint(v_->r_data.data(), v_->b.data());
    if (x_ref) o.axpy(v_->b.data(), float(alpha), x_ref, n);
    o.axpy(v_->b.data(), -float(alpha), x, n);
    rep.cg_iterations += cg(alpha, p.newton_cg_max, v_->b.data());
    o.axpy(x, 1.f, v_->h.data(), n);
    alpha = (alpha - p.alpha_min) / p.alpha_reduction + p.alpha_min;
    ++rep.newton_steps;
  }
  rep.final_residual = std::sqrt(o.read(kRes));
  model_.linearize(x);  // the coil images of the solution, for the output
  return rep;
}

}  // namespace radstream
