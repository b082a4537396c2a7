#include "nlinv/nlinv_solver.hpp"

#include <cmath>

#include "core/error.hpp"

namespace radstream {

NlinvSolver::NlinvSolver(const NlinvParams& p, std::unique_ptr<NlinvModel> model,
                         std::unique_ptr<VectorOps> ops)
    : p_(p),
      model_(std::move(model)),
      irgnm_(std::make_unique<Irgnm>(*model_, std::move(ops))),
      y_(model_->data_size(), model_->location()),
      x_(model_->unknowns(), model_->location()),
      ref_(model_->unknowns(), model_->location()) {
  reset();
}

void NlinvSolver::reset() {
  VectorOps& o = irgnm_->ops();
  o.zero(x_.data(), x_.size());
  o.zero(ref_.data(), ref_.size());
  model_->set(x_.data(), model_->pixels(), cfloat{1.f, 0.f});  // rho = 1, c = 0
  scaling_ = -1;
  first_ = true;
}

NlinvFrameReport NlinvSolver::reconstruct(const float* traj, const cfloat* samples, cfloat* out) {
  grid_frame(traj, samples);
  VectorOps& o = irgnm_->ops();
  const std::size_t m = model_->data_size();
  if (scaling_ < 0) {
    o.dot_re(y_.data(), y_.data(), m, 7);
    const double s = o.read(7);
    if (!(s > 0) || !std::isfinite(s))
      throw InputError(
          "nlinv: the stream's first frame has no signal (its gridded k-space is zero or not finite)");
    scaling_ = 100.0 / std::sqrt(s);
  }
  model_->scale(y_.data(), m, float(scaling_));
  NlinvFrameReport rep;
  rep.scaling = scaling_;
  rep.irgnm = irgnm_->solve(p_, x_.data(), first_ ? nullptr : ref_.data(), y_.data());
  o.copy(ref_.data(), x_.data(), x_.size());
  model_->scale(ref_.data(), ref_.size(), float(p_.temporal_damping));
  first_ = false;
  model_->image(p_.output, out);
  return rep;
}

}  // namespace radstream
