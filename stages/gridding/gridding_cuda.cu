// CUDA gridding: the spread of the frame's NUFFT plan (noncart/nufft_plan_cuda.cu: the tile sort, done once
// per frame by the chain on its stream, then the per-tile gather). As "density_gridding" the spread applies
// the density weights as it stages each sample: the separate density stage reads and writes every coil's
// samples (on an H200, R1's 32 coils: 18 us at the card's bandwidth). The ramps (ramp, ramp-dc) are computed
// by the spread itself from the trajectory (SampleWeights: no weights kernel, no weights array; the same
// bits as compute_density_weights_cuda); Voronoi's are computed first, one float a sample.
#include <optional>
#include <string>

#include "gpu/device_memory.hpp"
#include "noncart/nufft_plan_cuda.hpp"
#include "stages/gridding/gridding.hpp"

namespace radstream {
namespace {

class GriddingCuda final : public Stage {
 public:
  GriddingCuda(const GriddingParams& p, std::optional<DcfMethod> dcf)
      : p_(p), dcf_(dcf), stage_(dcf ? "density_gridding" : "gridding") {}
  std::string name() const override { return stage_; }
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
    if (dcf_ && *dcf_ == DcfMethod::Voronoi) {  // (the ramps are computed inside the spread)
      width_ = DeviceBuffer<double>(Extents{std::size_t(2 * g.spokes)});
      weights_ = DeviceBuffer<float>(Extents{std::size_t(g.spokes), std::size_t(g.samples)});
    }
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view(stage_, "input", in, in_ext_, Location::Device);
    expect_view(stage_, "output", out, out_ext_, Location::Device);
    const std::size_t n = std::size_t(g_.spokes) * g_.samples;
    NufftPlanCuda* plan = frame.cuda_plan;
    if (!plan || plan->points() != n || plan->grid() != G_)
      throw InputError(std::string(stage_) + ": the frame context carries no " + std::to_string(G_) +
                       "^2 point plan with " + std::to_string(n) + " points");
    if (plan->stream() != ctx.stream)
      throw InputError(std::string(stage_) + ": the point plan runs on another stream");
    if (!dcf_ || *dcf_ == DcfMethod::None) {  // (weights of 1: nothing to compute or apply)
      plan->spread(in.data, out.data, g_.coils);
      return;
    }
    if (frame.traj.size() != n * 2 || frame.traj.loc != Location::Device)
      throw InputError(std::string(stage_) + ": trajectory is not on the device or has the wrong size");
    if (is_ramp(*dcf_)) {  // computed by the spread as it stages each sample
      plan->spread(in.data, out.data, g_.coils, SampleWeights(*dcf_, g_.spokes, g_.samples));
      return;
    }
    compute_density_weights_cuda(*dcf_, frame.traj.data, g_.spokes, g_.samples, width_.data(),
                                 weights_.data(), ctx.stream);
    plan->spread(in.data, out.data, g_.coils, weights_.data());
  }

 private:
  GriddingParams p_;
  std::optional<DcfMethod> dcf_;  // density_gridding: the weighting applied inside the spread
  const char* stage_;             // the name, for messages (no string built per frame)
  Geometry g_;
  Extents in_ext_, out_ext_;
  int G_ = 0;
  DeviceBuffer<double> width_;
  DeviceBuffer<float> weights_;
};

}  // namespace

std::unique_ptr<Stage> make_gridding_cuda(const GriddingParams& p) {
  return std::make_unique<GriddingCuda>(p, std::nullopt);
}

std::unique_ptr<Stage> make_density_gridding_cuda(DcfMethod dcf, const GriddingParams& p) {
  return std::make_unique<GriddingCuda>(p, dcf);
}

}  // namespace radstream
