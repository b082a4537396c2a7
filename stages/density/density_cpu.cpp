// CPU density compensation: weights from the frame's trajectory, multiplied into every coil's samples.
#include <fmt/format.h>

#include "stages/density/density.hpp"

namespace radstream {
namespace {

class DensityCpu final : public Stage {
 public:
  explicit DensityCpu(const DensityParams& p) : p_(p) {}
  std::string name() const override { return "density"; }
  StageSpec spec() const override {
    StageSpec s;
    s.in_place = true;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    g_ = g;
    ext_ = input;
    weights_ = HostBuffer<float>(Extents{std::size_t(g.spokes), std::size_t(g.samples)});
    return input;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("density", "input", in, ext_, Location::Host);
    expect_view("density", "output", out, ext_, Location::Host);
    const std::size_t per_coil = std::size_t(g_.spokes) * g_.samples;
    if (frame.traj.size() != per_coil * 2)
      throw InputError(
          fmt::format("density: trajectory holds {} floats, expected {}", frame.traj.size(), per_coil * 2));
    compute_density_weights(p_.method, frame.traj.span(), g_.spokes, g_.samples, weights_.view().span());
    const float* w = weights_.data();
    const cfloat* src = in.data;
    cfloat* dst = out.data;
#pragma omp parallel for schedule(static)
    for (long c = 0; c < long(g_.coils); ++c)
      for (std::size_t i = 0; i < per_coil; ++i) dst[c * per_coil + i] = src[c * per_coil + i] * w[i];
  }

 private:
  DensityParams p_;
  Geometry g_;
  Extents ext_;
  HostBuffer<float> weights_;
};

}  // namespace

std::unique_ptr<Stage> make_density_cpu(const DensityParams& p) {
  return std::make_unique<DensityCpu>(p);
}

}  // namespace radstream
