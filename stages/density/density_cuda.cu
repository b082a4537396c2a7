// CUDA density compensation, same weights as the CPU twin: the weights of the frame's samples
// (compute_density_weights_cuda, noncart/density_weights_cuda.cu), then one thread per sample scales every
// coil. (The gridding recipes on the GPU apply the weights inside the spread instead: density_gridding.)
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "stages/density/density.hpp"

namespace radstream {
namespace {

__global__ void scale_samples(const float* __restrict__ w, long n, int C, const float2* __restrict__ in,
                              float2* __restrict__ out) {
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const float wf = w[j];
  for (int c = 0; c < C; ++c) {
    const float2 v = in[size_t(c) * n + j];
    out[size_t(c) * n + j] = make_float2(v.x * wf, v.y * wf);
  }
}

class DensityCuda final : public Stage {
 public:
  explicit DensityCuda(const DensityParams& p) : p_(p) {}
  std::string name() const override { return "density"; }
  StageSpec spec() const override {
    StageSpec s;
    s.in_place = true;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    g_ = g;
    ext_ = input;
    width_ = DeviceBuffer<double>(Extents{std::size_t(2 * g.spokes)});
    weights_ = DeviceBuffer<float>(Extents{std::size_t(g.spokes), std::size_t(g.samples)});
    return input;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("density", "input", in, ext_, Location::Device);
    expect_view("density", "output", out, ext_, Location::Device);
    if (frame.traj.size() != std::size_t(g_.spokes) * g_.samples * 2 || frame.traj.loc != Location::Device)
      throw InputError("density: trajectory is not on the device or has the wrong size");
    compute_density_weights_cuda(p_.method, frame.traj.data, g_.spokes, g_.samples, width_.data(),
                                 weights_.data(), ctx.stream);
    const long n = long(g_.spokes) * g_.samples;
    scale_samples<<<unsigned((n + 255) / 256), 256, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
        weights_.data(), n, g_.coils, reinterpret_cast<const float2*>(in.data),
        reinterpret_cast<float2*>(out.data));
    CUDA_CHECK_LAUNCH("scale_samples");
  }

 private:
  DensityParams p_;
  Geometry g_;
  Extents ext_;
  DeviceBuffer<double> width_;
  DeviceBuffer<float> weights_;
};

}  // namespace

std::unique_ptr<Stage> make_density_cuda(const DensityParams& p) {
  return std::make_unique<DensityCuda>(p);
}

}  // namespace radstream
