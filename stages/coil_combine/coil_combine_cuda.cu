// CUDA coil combination (root-sum-of-squares or sensitivity-weighted) and magnitude: one thread per pixel.
#include "gpu/cuda_check.cuh"
#include "stages/coil_combine/coil_combine.hpp"

namespace radstream {
namespace {

// The image's finite check, in the kernel that writes it (StageSpec::counts_non_finite): rare, so an atomic.
__device__ void count_non_finite(float2 v, unsigned* bad) {
  if (bad && !(isfinite(v.x) && isfinite(v.y))) atomicAdd(bad, 1u);
}

// blockIdx.y: the image (its coils in a block of their own, [images][coils][pixels]).
__global__ void rss(const float2* __restrict__ in, long pixels, int coils, float2* __restrict__ out,
                    unsigned* bad) {
  const long p = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  in += size_t(blockIdx.y) * coils * pixels;
  out += size_t(blockIdx.y) * pixels;
  float s = 0.f;
  for (int c = 0; c < coils; ++c) {
    const float2 v = in[size_t(c) * pixels + p];
    s += v.x * v.x + v.y * v.y;
  }
  out[p] = make_float2(sqrtf(s), 0.f);
  count_non_finite(out[p], bad);
}

__global__ void sense_combine(const float2* __restrict__ in, const float2* __restrict__ maps, long pixels,
                              int coils, bool keep_phase, float2* __restrict__ out, unsigned* bad) {
  const long p = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  float re = 0.f, im = 0.f, den = 0.f;
  for (int c = 0; c < coils; ++c) {
    const float2 v = in[size_t(c) * pixels + p], s = maps[size_t(c) * pixels + p];
    re += s.x * v.x + s.y * v.y;
    im += s.x * v.y - s.y * v.x;
    den += s.x * s.x + s.y * s.y;
  }
  if (keep_phase) {
    const float k = den > 1e-12f ? 1.f / den : 0.f;
    out[p] = make_float2(re * k, im * k);
  } else {
    out[p] = make_float2(den > 1e-12f ? sqrtf(re * re + im * im) / den : 0.f, 0.f);
  }
  count_non_finite(out[p], bad);
}

__global__ void magnitude(const float2* __restrict__ in, long n, float2* __restrict__ out, unsigned* bad) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  out[i] = make_float2(sqrtf(in[i].x * in[i].x + in[i].y * in[i].y), 0.f);
  count_non_finite(out[i], bad);
}

class CoilCombineCuda final : public Stage {
 public:
  explicit CoilCombineCuda(const CoilCombineParams& p) : p_(p) {}
  std::string name() const override { return "coil_combine"; }
  StageSpec spec() const override {
    StageSpec s;
    s.coil_maps = p_.method == CoilCombineMethod::Sense;
    s.counts_non_finite = true;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    in_ext_ = input;
    out_ext_ = combined_extents(g, input, p_.method);
    images_ = g.images;
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("coil_combine", "input", in, in_ext_, Location::Device);
    expect_view("coil_combine", "output", out, out_ext_, Location::Device);
    const long pixels = long(in_ext_[1] * in_ext_[2]);
    const auto s = static_cast<cudaStream_t>(ctx.stream);
    const unsigned blocks = unsigned((pixels + 255) / 256);
    if (p_.method == CoilCombineMethod::Sense) {
      expect_view("coil_combine", "coil maps", frame.coil_maps.data, in_ext_, Location::Device);
      sense_combine<<<blocks, 256, 0, s>>>(reinterpret_cast<const float2*>(in.data),
                                           reinterpret_cast<const float2*>(frame.coil_maps.data.data), pixels,
                                           int(in_ext_[0]), p_.keep_phase,
                                           reinterpret_cast<float2*>(out.data), frame.d_non_finite);
      CUDA_CHECK_LAUNCH("sense_combine");
      return;
    }
    rss<<<dim3(blocks, unsigned(images_)), 256, 0, s>>>(
        reinterpret_cast<const float2*>(in.data), pixels, int(in_ext_[0]) / images_,
        reinterpret_cast<float2*>(out.data), frame.d_non_finite);
    CUDA_CHECK_LAUNCH("rss");
  }

 private:
  CoilCombineParams p_;
  Extents in_ext_, out_ext_;
  int images_ = 1;
};

class MagnitudeCuda final : public Stage {
 public:
  std::string name() const override { return "magnitude"; }
  StageSpec spec() const override {
    StageSpec s;
    s.in_place = true;
    s.counts_non_finite = true;
    return s;
  }
  Extents configure(const Geometry&, const Extents& input, Context&) override {
    ext_ = input;
    return input;
  }
  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("magnitude", "input", in, ext_, Location::Device);
    expect_view("magnitude", "output", out, ext_, Location::Device);
    const long n = long(ext_.size());
    magnitude<<<unsigned((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
        reinterpret_cast<const float2*>(in.data), n, reinterpret_cast<float2*>(out.data), frame.d_non_finite);
    CUDA_CHECK_LAUNCH("magnitude");
  }

 private:
  Extents ext_;
};

}  // namespace

std::unique_ptr<Stage> make_coil_combine_cuda(const CoilCombineParams& p) {
  return std::make_unique<CoilCombineCuda>(p);
}

std::unique_ptr<Stage> make_magnitude_cuda() {
  return std::make_unique<MagnitudeCuda>();
}

}  // namespace radstream
