// CPU gridding: the spread of the frame's NUFFT plan (its points set once per frame by the chain: every
// sample's kernel weights and wrapped grid indices, shared by all coils); coils are spread in parallel, each
// into its own grid (no atomics needed).
#include <fmt/format.h>

#include "noncart/nufft_plan_cpu.hpp"
#include "stages/gridding/gridding.hpp"

namespace radstream {
namespace {

class GriddingCpu final : public Stage {
 public:
  explicit GriddingCpu(const GriddingParams& p) : p_(p) {}
  std::string name() const override { return "gridding"; }
  StageSpec spec() const override {
    StageSpec s;
    s.point_plan = true;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    g_ = g;
    in_ext_ = input;
    G_ = oversampled_grid_size(g.matrix, p_.oversampling);
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(G_), std::size_t(G_)};
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("gridding", "input", in, in_ext_, Location::Host);
    expect_view("gridding", "output", out, out_ext_, Location::Host);
    const std::size_t n = std::size_t(g_.spokes) * g_.samples;
    const NufftPlanCpu* plan = frame.cpu_plan;
    if (!plan || plan->points() != n || plan->grid()[0] != G_ || plan->dims() != 2)
      throw InputError(
          fmt::format("gridding: the frame context carries no {}^2 point plan with {} points", G_, n));
    plan->spread(in.data, out.data, g_.coils);
  }

 private:
  GriddingParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  int G_ = 0;
};

}  // namespace

std::unique_ptr<Stage> make_gridding_cpu(const GriddingParams& p) {
  return std::make_unique<GriddingCpu>(p);
}

}  // namespace radstream
