// The CPU twin of the density-weighted gridding (gridding.hpp): the frame's density weights multiplied into a
// copy of the samples, then the gridding stage's spread of that copy.
#include <fmt/format.h>

#include "stages/gridding/gridding.hpp"

namespace radstream {
namespace {

class DensityGriddingCpu final : public Stage {
 public:
  DensityGriddingCpu(DcfMethod dcf, const GriddingParams& p) : dcf_(dcf), grid_(make_gridding_cpu(p)) {}
  std::string name() const override { return "density_gridding"; }
  StageSpec spec() const override { return grid_->spec(); }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    g_ = g;
    in_ext_ = input;
    weights_ = HostBuffer<float>(Extents{std::size_t(g.spokes), std::size_t(g.samples)});
    weighted_ = HostBuffer<cfloat>(input);
    return grid_->configure(g, input, ctx);
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("density_gridding", "input", in, in_ext_, Location::Host);
    const std::size_t per_coil = std::size_t(g_.spokes) * g_.samples;
    if (frame.traj.size() != per_coil * 2)
      throw InputError(fmt::format("density_gridding: trajectory holds {} floats, expected {}",
                                   frame.traj.size(), per_coil * 2));
    compute_density_weights(dcf_, frame.traj.span(), g_.spokes, g_.samples, weights_.view().span());
    const float* w = weights_.data();
    cfloat* dst = weighted_.data();
#pragma omp parallel for schedule(static)
    for (long c = 0; c < long(g_.coils); ++c)
      for (std::size_t i = 0; i < per_coil; ++i) dst[c * per_coil + i] = in.data[c * per_coil + i] * w[i];
    grid_->process(frame, weighted_.view(), out, ctx);
  }

 private:
  DcfMethod dcf_;
  std::unique_ptr<Stage> grid_;
  Geometry g_;
  Extents in_ext_;
  HostBuffer<float> weights_;
  HostBuffer<cfloat> weighted_;
};

}  // namespace

std::unique_ptr<Stage> make_density_gridding_cpu(DcfMethod dcf, const GriddingParams& p) {
  return std::make_unique<DensityGriddingCpu>(dcf, p);
}

}  // namespace radstream
