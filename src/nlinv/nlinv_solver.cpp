#include "nlinv/nlinv_solver.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.hpp"
#include "core/log.hpp"
#include "nlinv/coil_compression.hpp"

namespace radstream {

int nlinv_model_coils(int input_coils, const NlinvParams& p) {
  return p.virtual_coils > 0 && p.virtual_coils < input_coils ? p.virtual_coils : input_coils;
}

IrgnmParams irgnm_params(const NlinvParams& p) {
  IrgnmParams q;
  q.newton_steps = p.newton;
  q.cg_max = p.newton_cg_max;
  q.alpha_min = p.alpha_min;
  q.alpha_reduction = p.alpha_reduction;
  q.deadline_ms = p.deadline_ms;
  q.stop = p.cg_rule == NlinvCgRule::Relative ? kRelativeStop : kNlinvLegacyStop;
  return q;
}

NlinvSolver::NlinvSolver(const NlinvParams& p, std::unique_ptr<NlinvModel> model,
                         std::unique_ptr<VectorOps> ops, std::unique_ptr<CoilCompressor> compressor,
                         int input_coils, std::size_t points)
    : p_(p),
      model_(std::move(model)),
      irgnm_(std::make_unique<Irgnm>(*model_, std::move(ops))),
      compressor_(std::move(compressor)),
      y_(model_->data_size(), model_->location()),
      x_(model_->unknowns(), model_->location()),
      ref_(model_->unknowns(), model_->location()),
      in_coils_(input_coils),
      points_(points) {
  if (in_coils_ != model_->coils())
    compressed_ = LocatedBuffer(points * std::size_t(model_->coils()), model_->location());
  irgnm_->set_device_loops(p.device_loops);
  reset();
}

void NlinvSolver::reset() {
  VectorOps& o = irgnm_->ops();
  o.zero(x_.data(), x_.size());
  o.zero(ref_.data(), ref_.size());
  o.fill(x_.data(), model_->pixels(), cfloat{1.f, 0.f});  // rho = 1, c = 0
  scaling_ = -1;
  compression_ready_ = false;  // a new stream: new principal components
}

int NlinvSolver::coil_maps(std::vector<cfloat>& host) {
  const std::size_t n = std::size_t(model_->coils()) * model_->matrix() * model_->matrix();
  if (maps_.size() != n) maps_ = LocatedBuffer(n, model_->location());  // once, on the first call
  model_->coil_maps(maps_.data());
  host.resize(n);
  irgnm_->ops().to_host(host.data(), maps_.data(), n);
  return model_->coils();
}

void NlinvSolver::warm_up() {
  const Location loc = model_->location();
  LocatedBuffer traj(points_, loc);  // 2 x points zero floats: every sample at k = 0
  LocatedBuffer samples(points_ * std::size_t(in_coils_), loc),
      out(std::size_t(model_->matrix()) * model_->matrix(), loc);
  irgnm_->ops().zero(traj.data(), traj.size());
  irgnm_->ops().fill(samples.data(), samples.size(), cfloat{1.f, 0.f});
  quiet_ = true;
  reconstruct(reinterpret_cast<const float*>(traj.data()), samples.data(), out.data());
  irgnm_->forget_timings();  // the warm-up's first runs are no measure of a frame's
  if (p_.deadline_ms > 0) {
    // A second run times each piece of work and the output for the first frame's deadline (with nothing
    // timed it would not know the output's cost); what it overran by is not kept (its gridding, every sample
    // at k = 0, is no frame's).
    reset();
    reconstruct(reinterpret_cast<const float*>(traj.data()), samples.data(), out.data());
    irgnm_->forget_reserve();
  }
  quiet_ = false;
  reset();
}

NlinvFrameReport NlinvSolver::reconstruct(const float* traj, const cfloat* samples, cfloat* out) {
  const auto start = std::chrono::steady_clock::now();
  if (in_coils_ != model_->coils()) {
    if (!compression_ready_) {  // once per stream, from its first frame
      // (inside the first frame's deadline: the covariance is summed where the samples are)
      const CoilCompression cc = compression_from_covariance(
          compressor_->covariance(samples, in_coils_, points_), in_coils_, model_->coils());
      compressor_->set(cc);
      if (!quiet_)
        log::info(
            "nlinv: {} coils compressed to {} virtual coils (principal components of the stream's first "
            "frame: {:.2f}% of its energy; {:.2f} ms)",
            in_coils_, model_->coils(), 100.0 * cc.kept_energy,
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      compression_ready_ = true;
    }
    compressor_->compress(samples, compressed_.data(), points_);
    samples = compressed_.data();
  }
  grid_frame(traj, samples);
  VectorOps& o = irgnm_->ops();
  const std::size_t m = model_->data_size();
  if (scaling_ < 0) {
    constexpr int kScaleSlot = VectorOps::kSlots - 1;  // the IRGNM uses the first ones
    o.dot_re(y_.data(), y_.data(), m, kScaleSlot);
    const double s = o.read(kScaleSlot);
    if (!(s > 0) || !std::isfinite(s))
      throw InputError(
          "nlinv: the stream's first frame has no signal (its gridded k-space is zero or not finite)");
    scaling_ = 100.0 / std::sqrt(s);
  }
  // In steps that each fit a float: data near float's smallest (denormal) values need a factor past its
  // largest (1e-42 -> 1e43), which as one float is Inf and turns every sample into NaN.
  for (double left = scaling_; left != 1.0;) {
    const double step = std::clamp(left, 1e-30, 1e30);
    o.scale(y_.data(), m, float(step));
    left /= step;
    if (std::abs(left - 1.0) < 1e-12) break;
  }
  NlinvFrameReport rep;
  rep.scaling = scaling_;
  // x_ref: damping x the previous solution; zeros (reset()) before the stream's first frame, which is BART's
  // first-frame reference as well.
  rep.irgnm = irgnm_->solve(irgnm_params(p_), x_.data(), ref_.data(), y_.data(), start);
  o.copy(ref_.data(), x_.data(), x_.size());
  o.scale(ref_.data(), ref_.size(), float(p_.temporal_damping));
  model_->image(p_.output, out);
  if (model_->location() == Location::Device) {
    cfloat probe;
    o.to_host(&probe, out, 1);  // waits for the image: the frame's time is its whole work
  }
  const auto end = std::chrono::steady_clock::now();
  rep.ms = std::chrono::duration<double, std::milli>(end - start).count();
  if (p_.deadline_ms > 0 && !irgnm_->clock_driven()) {  // (under a test's clock the test says what they cost)
    irgnm_->note_tail(std::chrono::duration<double, std::milli>(end - irgnm_->tail_start()).count());
    irgnm_->note_overrun(rep.ms - p_.deadline_ms);
  }
  rep.irgnm.deadline_reserve_ms = irgnm_->reserve_ms();  // as the next frame starts with it
  return rep;
}

}  // namespace radstream
