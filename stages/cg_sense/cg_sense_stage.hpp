// The CG-SENSE stage for either backend: Op is SenseOperatorCpu or SenseOperatorCuda, made by the backend's
// factory in configure(). Included by cg_sense_cpu.cpp and cg_sense_cuda.cu only.
#pragma once
#include <chrono>
#include <functional>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "iter/conjugate_gradient.hpp"
#include "iter/deadline_stepper.hpp"
#include "noncart/coil_split_sense.hpp"
#include "stages/cg_sense/cg_sense.hpp"

namespace radstream {

template <class Op>
class CgSenseStage final : public Stage {
 public:
  using OpFactory = std::function<std::unique_ptr<Op>(int N, int coils, std::size_t points, Context&)>;
  using OpsFactory = std::function<std::unique_ptr<VectorOps>(Context&)>;
  using RegFactory = std::function<std::unique_ptr<LinearOperator>(int N, Context&)>;
  using SplitFactory = std::function<std::unique_ptr<CoilSplitSense>(int N, int coils, std::size_t points,
                                                                     const CoilSplitOptions&)>;

  CgSenseStage(const CgSenseParams& p, Location loc, OpFactory make_op, OpsFactory make_ops,
               RegFactory make_reg, SplitFactory make_split)
      : p_(p),
        loc_(loc),
        make_op_(std::move(make_op)),
        make_ops_(std::move(make_ops)),
        make_reg_(std::move(make_reg)),
        make_split_(std::move(make_split)) {}

  std::string name() const override { return "cg_sense"; }
  StageSpec spec() const override {
    StageSpec s;
    s.coil_maps = true;
    s.previous_output = p_.warm_start;
    s.capturable = p_.deadline_ms <= 0 && p_.split_parts <= 1;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    if (input.rank != 3) throw ConfigError("cg_sense: expects [coils][spokes][samples], got " + input.str());
    in_ext_ = input;
    N_ = g.matrix;
    pixels_ = std::size_t(N_) * N_;
    out_ext_ = Extents{std::size_t(N_), std::size_t(N_)};
    maps_ext_ = Extents{input[0], std::size_t(N_), std::size_t(N_)};
    cg_.reset();
    op_ = make_op_(N_, int(input[0]), input[1] * input[2], ctx);
    ops_ = make_ops_(ctx);
    reg_ = p_.smoothness > 0 ? make_reg_(N_, ctx) : nullptr;
    b_ = Vector(pixels_, loc_);
    cg_ = std::make_unique<ConjugateGradient>(pixels_, *ops_);
    warm_up(input, ctx);
    maps_ = nullptr;
    configure_split(input);
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    const auto t0 = std::chrono::steady_clock::now();
    expect_view("cg_sense", "input", in, in_ext_, loc_);
    expect_view("cg_sense", "output", out, out_ext_, loc_);
    if (frame.coil_maps.version == 0)
      throw InputError(
          "cg_sense: no coil maps for this frame (give --sens S.cfl, or let radstream estimate them)");
    expect_view("cg_sense", "coil maps", frame.coil_maps.data, maps_ext_, loc_);
    if (frame.coil_maps.data.data != maps_) {
      maps_ = frame.coil_maps.data.data;
      op_->set_maps(maps_);
    }
    probe_begin(ctx, t0);  // on the GPU this may decide the split, from the earlier frames' times
    if (split_) return process_split(frame, in, out, ctx);
    op_->set_points(frame.traj.data, nullptr);
    op_->adjoint(in.data, b_.data());
    const bool warm = p_.warm_start && frame.previous.data;
    if (warm) ops_->copy(out.data, frame.previous.data, pixels_);
    CgOptions o;
    o.max_iterations = p_.iterations;
    const double scale = op_->weight_sum() * frame.coil_maps.peak_power;
    o.lambda = p_.lambda * scale;
    o.mu = p_.smoothness * scale;
    stats_ = SolverStats{true, p_.iterations, 0, 0};
    if (p_.deadline_ms <= 0 && loc_ == Location::Device) {  // one queued sequence (a CUDA graph may hold it)
      cg_->enqueue(*op_, b_.data(), out.data, o, warm, reg_.get());
      probe_end(ctx, t0);
      return;
    }
    if (p_.deadline_ms <= 0) {  // on the host, step by step: the same arithmetic, and its progress said
      cg_->begin(*op_, b_.data(), out.data, o, warm, reg_.get());
      progress_total_ = p_.iterations;
      for (int it = 0; it < p_.iterations; ++it) {
        cg_->step(*op_, out.data, o, reg_.get());
        progress_residual_ = cg_->residual();
        progress_done_ = it + 1;
      }
      progress_total_ = 0;
      probe_end(ctx, t0);
      return;
    }
    // Deadline: iterate while the next iteration (timed as the slowest of this frame's) still fits before the
    // reserve learned from the frames that overran (iter/deadline_stepper.hpp).
    deadline_.begin_frame(p_.deadline_ms, t0);
    auto elapsed = [&] {
      if (loc_ == Location::Device) gpu::synchronize(ctx.stream);
      return deadline_.now_ms();
    };
    cg_->begin(*op_, b_.data(), out.data, o, warm, reg_.get());
    double t = elapsed();
    while (cg_->iterations() < p_.iterations && (cg_->iterations() == 0 || deadline_.fits(t, 0))) {
      cg_->step(*op_, out.data, o, reg_.get());
      const double t1 = elapsed();
      deadline_.note(DeadlineStepper::Work::Iteration, t1 - t);
      t = t1;
    }
    stats_.iterations = cg_->iterations();
    stats_.ms = t;
    stats_.stopped_early = cg_->iterations() < p_.iterations;
    deadline_.note_overrun(t - p_.deadline_ms);
    stats_.deadline_reserve_ms = deadline_.reserve_ms();
  }

  std::string progress() const override {
    const int total = progress_total_.load();
    if (total <= 0) return {};
    char line[96];  // (no fmt here: nvcc compiles this header too)
    std::snprintf(line, sizeof line, "CG iteration %d of %d, relative residual %.3g", progress_done_.load(),
                  total, progress_residual_.load());
    return line;
  }

  SolverStats solver_stats() override {
    if (stats_.present && cg_ && !split_) stats_.residual = cg_->residual();
    return stats_;
  }

 private:
  static constexpr int kProbeFrames = 5;
  // Where a host solve is, read by progress() on another thread (total 0: none running).
  std::atomic<int> progress_total_{0}, progress_done_{0};
  std::atomic<double> progress_residual_{0.0};

  void configure_split(const Extents& input) {
    split_.reset();
    probe_ms_.clear();
    pending_probe_ = false;
    if (p_.split_parts <= 1) return;
    if (p_.smoothness > 0 || p_.deadline_ms > 0)
      throw ConfigError("cg_sense: split_parts = " + std::to_string(p_.split_parts) +
                        " needs smoothness = 0 and deadline_ms = 0 (the coil split has neither)");
    if (p_.split_parts > int(input[0]))
      throw ConfigError("cg_sense: split_parts = " + std::to_string(p_.split_parts) + " is more than the " +
                        std::to_string(input[0]) + " coils");
    split_points_ = input[1] * input[2];
    if (loc_ == Location::Device && !begin_) {
      begin_.emplace();
      end_.emplace();
    }
    if (p_.split_above_ms <= 0) start_split(0.0);
  }

  void start_split(double median_ms) {
    CoilSplitOptions o;
    o.iterations = p_.iterations;
    o.lambda = p_.lambda;
    o.toeplitz = p_.toeplitz;
    o.warm_start = p_.warm_start;
    split_ = make_split_(N_, int(in_ext_[0]), split_points_, o);
    log_cg_sense_split(in_ext_[0], split_->parts(), median_ms, p_.split_above_ms, true);
  }

  // Times the first frames' unsplit solves (host clock on the cpu; events on the GPU, read a frame later when
  // the chain has synchronized) and starts the split when their median is above the threshold.
  bool probing() const { return p_.split_parts > 1 && !split_ && int(probe_ms_.size()) < kProbeFrames; }
  void probe_begin(Context& ctx, std::chrono::steady_clock::time_point) {
    if (!probing()) return;
    if (loc_ == Location::Device) {
      if (pending_probe_) probe_ms_.push_back(end_->ms_since(*begin_));
      pending_probe_ = false;
      decide();
      if (probing()) begin_->record(ctx.stream);
    }
  }
  void probe_end(Context& ctx, std::chrono::steady_clock::time_point t0) {
    if (!probing()) return;
    if (loc_ == Location::Device) {
      end_->record(ctx.stream);
      pending_probe_ = true;
    } else {
      probe_ms_.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      decide();
    }
  }
  // Once, at the kProbeFrames-th timing: split or not for the rest of the stream (nothing is timed after).
  void decide() {
    if (split_ || int(probe_ms_.size()) != kProbeFrames) return;
    std::vector<double> v = probe_ms_;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(v.size() / 2), v.end());
    const double median = v[v.size() / 2];
    if (median > p_.split_above_ms)
      start_split(median);
    else
      log_cg_sense_split(in_ext_[0], 1, median, p_.split_above_ms, false);
  }

  void process_split(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) {
    if (loc_ == Location::Device) {
      split_->set_frame_device(frame.traj.data, in.data, frame.coil_maps.data.data,
                               frame.coil_maps.peak_power, ctx.stream, frame.coil_maps.version);
    } else {
      split_->set_frame(frame.traj.data, in.data, frame.coil_maps.data.data, frame.coil_maps.version);
    }
    const CgReport r = split_->solve();
    if (loc_ == Location::Device)
      split_->image_device(out.data);
    else
      split_->image(out.data);
    stats_ = SolverStats{true, r.iterations, r.residual, 0, split_->parts()};
  }

  // One solve on zeros: every kernel and FFT plan runs once here, in configure(), so that the first frame
  // does not pay the GPU's lazy module loading (a deadline frame would overrun by it).
  void warm_up(const Extents& input, Context& ctx) {
    const std::size_t points = input[1] * input[2];
    Vector maps(input[0] * pixels_, loc_), traj(points, loc_), data(input[0] * points, loc_),
        x(pixels_, loc_);
    op_->set_maps(maps.data());
    op_->set_points(reinterpret_cast<const float*>(traj.data()), nullptr);  // 2 x points zero floats
    op_->adjoint(data.data(), b_.data());
    CgOptions o;
    o.max_iterations = 1;
    cg_->enqueue(*op_, b_.data(), x.data(), o, true);
    cg_->residual();  // waits for the device
    if (loc_ == Location::Device) gpu::synchronize(ctx.stream);
  }

  CgSenseParams p_;
  Location loc_;
  OpFactory make_op_;
  OpsFactory make_ops_;
  RegFactory make_reg_;
  SplitFactory make_split_;
  std::unique_ptr<LinearOperator> reg_;  // the smoothness penalty's D, when smoothness > 0
  Extents in_ext_, out_ext_, maps_ext_;
  int N_ = 0;
  std::size_t pixels_ = 0;
  std::unique_ptr<Op> op_;
  std::unique_ptr<VectorOps> ops_;
  Vector b_;
  std::unique_ptr<ConjugateGradient> cg_;
  const cfloat* maps_ = nullptr;
  SolverStats stats_;
  // Deadline mode: this frame's slowest iteration and the reserve learned from overruns (no margin, no floor:
  // R9's solves end far before their deadline).
  DeadlineStepper deadline_{{1.0, 0.0, false}};
  std::unique_ptr<CoilSplitSense> split_;
  std::size_t split_points_ = 0;
  std::vector<double> probe_ms_;
  bool pending_probe_ = false;
  std::optional<gpu::Event> begin_, end_;
};

}  // namespace radstream
