// The NLINV stage for either backend: the engine (NlinvCpu or the CUDA one) made in configure() by the
// backend's factory. Included by nlinv_cpu.cpp and nlinv_cuda.cu only.
#pragma once
#include <functional>
#include <memory>

#include "core/error.hpp"
#include "gpu/device_memory.hpp"
#include "nlinv/nlinv_solver.hpp"
#include "stages/nlinv/nlinv.hpp"

namespace radstream {

class NlinvStage final : public Stage {
 public:
  using Factory = std::function<std::unique_ptr<NlinvSolver>(int N, int coils, std::size_t points, Context&)>;
  NlinvStage(Location loc, Factory make) : loc_(loc), make_(std::move(make)) {}

  std::string name() const override { return "nlinv"; }
  StageSpec spec() const override {
    StageSpec s;
    s.state = {Extents{1}};  // 0: no frame solved since configure() or a new stream
    s.capturable = false;    // the CG stopping rule reads |r| on the host
    if (engine_) {
      const auto n = std::size_t(engine_->model().matrix());
      s.outputs = {{kEstimatedCoilMaps, Extents{std::size_t(engine_->model().coils()), n, n}}};
    }
    return s;
  }
  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    if (input.rank != 3) throw ConfigError("nlinv: expects [coils][spokes][samples], got " + input.str());
    in_ = input;
    engine_ = make_(g.matrix, int(input[0]), input[1] * input[2], ctx);
    engine_->warm_up();
    return Extents{std::size_t(g.matrix), std::size_t(g.matrix)};
  }
  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("nlinv", "input", in, in_, loc_);
    cfloat* solved = frame.state[0].data;
    if (!read_flag(solved, ctx)) engine_->reset();
    const auto rep = engine_->reconstruct(frame.traj.data, in.data, out.data);
    set_flag(solved, ctx);
    stats_.present = true;
    stats_.iterations = rep.irgnm.cg_iterations;
    stats_.residual = rep.irgnm.final_residual / 100.0;  // the data are scaled to norm 100
    stats_.ms = rep.ms;
    stats_.stopped_early = rep.irgnm.stopped_early;
    stats_.deadline_reserve_ms = rep.irgnm.deadline_reserve_ms;
  }
  SolverStats solver_stats() override { return stats_; }
  // Output 0, the estimated coil maps: the coil images of the last frame's solution.
  bool write_output(std::size_t index, View<cfloat> out, Context& ctx) override {
    (void)ctx;  // the engine enqueues on the chain's stream, which it was made with
    if (index != 0 || !engine_ || !stats_.present) return false;
    engine_->model().coil_maps(out.data);
    return true;
  }

 private:
  bool read_flag(const cfloat* flag, Context& ctx) const {
    if (loc_ != Location::Device) return flag[0] != cfloat{};
    cfloat v{};
    gpu::copy_to_host(&v, flag, sizeof(cfloat), ctx.stream);
    gpu::synchronize(ctx.stream);
    return v != cfloat{};
  }
  void set_flag(cfloat* flag, Context& ctx) const {
    if (loc_ != Location::Device)
      flag[0] = cfloat{1.f, 0.f};
    else
      gpu::memset_device(flag, 0x3f, sizeof(cfloat), ctx.stream);  // any non-zero bits
  }

  Location loc_;
  Factory make_;
  Extents in_;
  std::unique_ptr<NlinvSolver> engine_;
  SolverStats stats_;
};

}  // namespace radstream
