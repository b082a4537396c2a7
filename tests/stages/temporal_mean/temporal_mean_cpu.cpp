#include <algorithm>

#include "tests/stages/temporal_mean/temporal_mean.hpp"

namespace radstream {
namespace {

class TemporalMeanCpu final : public Stage {
 public:
  explicit TemporalMeanCpu(float alpha) : alpha_(alpha) {}
  std::string name() const override { return "temporal_mean"; }
  StageSpec spec() const override {
    StageSpec s;
    s.state = {ext_};
    return s;
  }
  Extents configure(const Geometry&, const Extents& input, Context&) override { return ext_ = input; }
  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("temporal_mean", "input", in, ext_, Location::Host);
    expect_view("temporal_mean", "state", View<const cfloat>(frame.state[0]), ext_, Location::Host);
    cfloat* state = frame.state[0].data;
    for (std::size_t i = 0; i < in.size(); ++i) {
      out.data[i] = alpha_ * in.data[i] + (1.f - alpha_) * state[i];
      state[i] = out.data[i];
    }
  }

 private:
  float alpha_;
  Extents ext_;
};

}  // namespace

std::unique_ptr<Stage> make_temporal_mean_cpu(float alpha) {
  return std::make_unique<TemporalMeanCpu>(alpha);
}

}  // namespace radstream
