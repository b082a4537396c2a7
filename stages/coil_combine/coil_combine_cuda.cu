// CUDA root-sum-of-squares: one thread per pixel.
#include "coil_combine/coil_combine.hpp"
#include "gpu/cuda_check.cuh"

namespace radstream {
namespace {

__global__ void rss(const float2* __restrict__ in, long pixels, int coils, float2* __restrict__ out) {
  const long p = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  float s = 0.f;
  for (int c = 0; c < coils; ++c) {
    const float2 v = in[size_t(c) * pixels + p];
    s += v.x * v.x + v.y * v.y;
  }
  out[p] = make_float2(sqrtf(s), 0.f);
}

class CoilCombineCuda final : public Stage {
 public:
  explicit CoilCombineCuda(const CoilCombineParams& p) : p_(p) {}
  std::string name() const override { return "coil_combine"; }

  Extents configure(const Geometry&, const Extents& input, Context&) override {
    in_ext_ = input;
    out_ext_ = combined_extents(input);
    return out_ext_;
  }

  void process(const FrameContext&, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("coil_combine", "input", in, in_ext_, Location::Device);
    expect_view("coil_combine", "output", out, out_ext_, Location::Device);
    const long pixels = long(in_ext_[1] * in_ext_[2]);
    rss<<<unsigned((pixels + 255) / 256), 256, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
        reinterpret_cast<const float2*>(in.data), pixels, int(in_ext_[0]),
        reinterpret_cast<float2*>(out.data));
    CUDA_CHECK_LAUNCH("rss");
  }

 private:
  CoilCombineParams p_;
  Extents in_ext_, out_ext_;
};

}  // namespace

std::unique_ptr<Stage> make_coil_combine_cuda(const CoilCombineParams& p) {
  return std::make_unique<CoilCombineCuda>(p);
}

}  // namespace radstream
