#include "gpu/cuda_check.cuh"
#include "tests/stages/temporal_mean/temporal_mean.hpp"

namespace radstream {
namespace {

__global__ void temporal_mean_kernel(const float2* in, float2* out, float2* state, float alpha,
                                     std::size_t n) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float2 v =
      make_float2(alpha * in[i].x + (1.f - alpha) * state[i].x, alpha * in[i].y + (1.f - alpha) * state[i].y);
  out[i] = v;
  state[i] = v;
}

class TemporalMeanCuda final : public Stage {
 public:
  explicit TemporalMeanCuda(float alpha) : alpha_(alpha) {}
  std::string name() const override { return "temporal_mean"; }
  StageSpec spec() const override {
    StageSpec s;
    s.state = {ext_};
    return s;
  }
  Extents configure(const Geometry&, const Extents& input, Context&) override { return ext_ = input; }
  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("temporal_mean", "input", in, ext_, Location::Device);
    expect_view("temporal_mean", "state", View<const cfloat>(frame.state[0]), ext_, Location::Device);
    const std::size_t n = in.size();
    temporal_mean_kernel<<<unsigned((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
        reinterpret_cast<const float2*>(in.data), reinterpret_cast<float2*>(out.data),
        reinterpret_cast<float2*>(frame.state[0].data), alpha_, n);
    CUDA_CHECK_LAUNCH("temporal_mean");
  }

 private:
  float alpha_;
  Extents ext_;
};

}  // namespace

std::unique_ptr<Stage> make_temporal_mean_cuda(float alpha) {
  return std::make_unique<TemporalMeanCuda>(alpha);
}

}  // namespace radstream
