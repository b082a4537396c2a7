// CUDA deapodization and crop: one thread per output pixel and coil, tables from make_deapodize_table.

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "noncart/kaiser_bessel.hpp"
#include "stages/deapodize/deapodize.hpp"

namespace radstream {
namespace {

__global__ void crop_deapodize(const float2* __restrict__ grid, int G, int N, int coils,
                               const int* __restrict__ src, const float* __restrict__ factor,
                               float2* __restrict__ out) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y;
  const int c = blockIdx.z;
  if (x >= N || c >= coils) return;
  const float2 v = grid[(size_t(c) * G + src[y]) * G + src[x]];
  const float f = factor[y] * factor[x];
  out[(size_t(c) * N + y) * N + x] = make_float2(v.x * f, v.y * f);
}

class DeapodizeCuda final : public Stage {
 public:
  explicit DeapodizeCuda(const NufftKernel& k) : k_(k) {}
  std::string name() const override { return "deapodize"; }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    G_ = oversampled_grid_size(g.matrix, k_.oversampling);
    const Extents expect{std::size_t(g.coils), std::size_t(G_), std::size_t(G_)};
    if (!(input == expect))
      throw ConfigError("deapodize: input " + input.str() + " does not match grid " + expect.str());
    in_ext_ = input;
    N_ = g.matrix;
    const DeapodizeTable t = make_deapodize_table(N_, k_);
    src_ = DeviceBuffer<int>(Extents{std::size_t(N_)});
    factor_ = DeviceBuffer<float>(Extents{std::size_t(N_)});
    gpu::copy_to_device(src_.data(), t.src.data(), N_ * sizeof(int), ctx.stream);
    gpu::copy_to_device(factor_.data(), t.factor.data(), N_ * sizeof(float), ctx.stream);
    gpu::synchronize(ctx.stream);
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(N_), std::size_t(N_)};
    return out_ext_;
  }

  void process(const FrameContext&, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("deapodize", "input", in, in_ext_, Location::Device);
    expect_view("deapodize", "output", out, out_ext_, Location::Device);
    const int coils = int(in_ext_[0]);
    const dim3 block(128), grid((N_ + 127) / 128, N_, coils);
    crop_deapodize<<<grid, block, 0, static_cast<cudaStream_t>(ctx.stream)>>>(
        reinterpret_cast<const float2*>(in.data), G_, N_, coils, src_.data(), factor_.data(),
        reinterpret_cast<float2*>(out.data));
    CUDA_CHECK_LAUNCH("crop_deapodize");
  }

 private:
  NufftKernel k_;
  Extents in_ext_, out_ext_;
  int N_ = 0, G_ = 0;
  DeviceBuffer<int> src_;
  DeviceBuffer<float> factor_;
};

}  // namespace

std::unique_ptr<Stage> make_deapodize_cuda(const NufftKernel& kernel) {
  return std::make_unique<DeapodizeCuda>(kernel);
}

}  // namespace radstream
