// CUDA gridding: an adapter over the NUFFT plan's spread (the tile sort once per frame, then the per-tile
// gather; see noncart/nufft_plan_cuda.cu). All buffers are allocated in configure().
#include <string>

#include "gridding/gridding.hpp"
#include "noncart/nufft_plan_cuda.hpp"

namespace radstream {
namespace {

class GriddingCuda final : public Stage {
 public:
  explicit GriddingCuda(const GriddingParams& p) : p_(p) {}
  std::string name() const override { return "gridding"; }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    g_ = g;
    in_ext_ = input;
    const int G = oversampled_grid_size(g.matrix, p_.oversampling);
    plan_.reset();
    plan_ = std::make_unique<NufftPlanCuda>(G, p_.kernel(), std::size_t(g.spokes) * g.samples, ctx.stream);
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(G), std::size_t(G)};
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("gridding", "input", in, in_ext_, Location::Device);
    expect_view("gridding", "output", out, out_ext_, Location::Device);
    const std::size_t n = std::size_t(g_.spokes) * g_.samples;
    if (frame.traj.size() != n * 2 || frame.traj.loc != Location::Device)
      throw InputError("gridding: trajectory is not on the device or has the wrong size");
    if (plan_->stream() != ctx.stream) throw InputError("gridding: configured on another stream");
    plan_->set_points(frame.traj.data, n);
    plan_->spread(in.data, out.data, g_.coils);
  }

 private:
  GriddingParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  std::unique_ptr<NufftPlanCuda> plan_;
};

}  // namespace

std::unique_ptr<Stage> make_gridding_cuda(const GriddingParams& p) {
  return std::make_unique<GriddingCuda>(p);
}

}  // namespace radstream
