// CPU gridding: an adapter over the NUFFT plan's spread. Per frame the plan computes every sample's kernel
// weights and wrapped grid indices once (shared by all coils); coils are then spread in parallel, each into
// its own grid (no atomics needed).
#include <fmt/format.h>

#include "gridding/gridding.hpp"
#include "noncart/nufft_plan_cpu.hpp"

namespace radstream {
namespace {

class GriddingCpu final : public Stage {
 public:
  explicit GriddingCpu(const GriddingParams& p) : p_(p) {}
  std::string name() const override { return "gridding"; }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    g_ = g;
    in_ext_ = input;
    const int G = oversampled_grid_size(g.matrix, p_.oversampling);
    plan_ = std::make_unique<NufftPlanCpu>(2, std::array<int, 3>{G, G, 1}, p_.kernel(),
                                           std::size_t(g.spokes) * g.samples);
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(G), std::size_t(G)};
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("gridding", "input", in, in_ext_, Location::Host);
    expect_view("gridding", "output", out, out_ext_, Location::Host);
    const std::size_t n = std::size_t(g_.spokes) * g_.samples;
    if (frame.traj.size() != n * 2)
      throw InputError(fmt::format("gridding: trajectory holds {} floats, expected {}", frame.traj.size(), n * 2));
    plan_->set_points(frame.traj.data, n);
    plan_->spread(in.data, out.data, g_.coils);
  }

 private:
  GriddingParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  std::unique_ptr<NufftPlanCpu> plan_;
};

}  // namespace

std::unique_ptr<Stage> make_gridding_cpu(const GriddingParams& p) {
  return std::make_unique<GriddingCpu>(p);
}

}  // namespace radstream
