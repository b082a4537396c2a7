// CUDA gridding: the spread of the frame's NUFFT plan (noncart/nufft_plan_cuda.cu: the tile sort, done once
// per frame by the chain on its stream, then the per-tile gather).
#include <string>

#include "noncart/nufft_plan_cuda.hpp"
#include "stages/gridding/gridding.hpp"

namespace radstream {
namespace {

class GriddingCuda final : public Stage {
 public:
  explicit GriddingCuda(const GriddingParams& p) : p_(p) {}
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

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("gridding", "input", in, in_ext_, Location::Device);
    expect_view("gridding", "output", out, out_ext_, Location::Device);
    const std::size_t n = std::size_t(g_.spokes) * g_.samples;
    NufftPlanCuda* plan = frame.cuda_plan;
    if (!plan || plan->points() != n || plan->grid() != G_)
      throw InputError("gridding: the frame context carries no " + std::to_string(G_) +
                       "^2 point plan with " + std::to_string(n) + " points");
    if (plan->stream() != ctx.stream) throw InputError("gridding: the point plan runs on another stream");
    plan->spread(in.data, out.data, g_.coils);
  }

 private:
  GriddingParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  int G_ = 0;
};

}  // namespace

std::unique_ptr<Stage> make_gridding_cuda(const GriddingParams& p) {
  return std::make_unique<GriddingCuda>(p);
}

}  // namespace radstream
