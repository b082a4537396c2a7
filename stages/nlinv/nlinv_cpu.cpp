#include <fmt/format.h>

#include "core/error.hpp"
#include "nlinv/nlinv_cpu.hpp"
#include "stages/nlinv/nlinv.hpp"

namespace radstream {

namespace {

class NlinvStageCpu final : public Stage {
 public:
  explicit NlinvStageCpu(const NlinvParams& p) : p_(p) {}
  std::string name() const override { return "nlinv"; }
  StageSpec spec() const override {
    StageSpec s;
    s.state = {Extents{1}};  // 0: no frame solved since configure() or a new stream
    s.capturable = false;
    return s;
  }
  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    if (input.rank != 3) throw ConfigError("nlinv: expects [coils][spokes][samples], got " + input.str());
    in_ = input;
    n_ = g.matrix;
    engine_ = std::make_unique<NlinvCpu>(g.matrix, int(input[0]), input[1] * input[2], p_, ctx.threads);
    return Extents{std::size_t(n_), std::size_t(n_)};
  }
  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("nlinv", "input", in, in_, Location::Host);
    cfloat* solved = frame.state[0].data;
    if (solved[0] == cfloat{}) engine_->reset();
    const auto rep = engine_->reconstruct(frame.traj.data, in.data, out.data);
    solved[0] = cfloat{1.f, 0.f};
    stats_.present = true;
    stats_.iterations = rep.irgnm.cg_iterations;
    stats_.residual = rep.irgnm.final_residual / 100.0;  // the data are scaled to norm 100
  }
  SolverStats solver_stats() override { return stats_; }

 private:
  NlinvParams p_;
  Extents in_;
  int n_ = 0;
  std::unique_ptr<NlinvEngine> engine_;
  SolverStats stats_;
};

}  // namespace

std::unique_ptr<Stage> make_nlinv_cpu(const NlinvParams& p) {
  return std::make_unique<NlinvStageCpu>(p);
}

}  // namespace radstream
