// CUDA gridding, first version: one thread per sample computes the sample's W x-weights and W y-weights from
// the lookup table once (registers) and spreads every coil's value with atomic adds into the global grids;
// the coil loop reuses the weights, reads of the data are coalesced. (A tiled, sorted, shared-memory version
// that avoids global atomics is the planned next step.)
#include <cmath>
#include <string>
#include <vector>

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "gridding/gridding.hpp"
#include "gridding/kaiser_bessel.hpp"

namespace radstream {
namespace {

constexpr int kMaxWidth = 16;

__device__ __forceinline__ float lut_lookup(const float* __restrict__ lut, int res, int edge, float t) {
  const float x = fabsf(t) * float(res);
  const int i = int(x);
  if (i >= edge) return 0.f;
  const float f = x - float(i);
  const float a = __ldg(lut + i), b = __ldg(lut + i + 1);
  return a + f * (b - a);
}

__global__ void grid_samples(const float2* __restrict__ data, const float* __restrict__ traj, long n,
                             int coils, int G, int W, const float* __restrict__ lut, int res, int edge,
                             float2* __restrict__ grid) {
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const float kx = traj[2 * j], ky = traj[2 * j + 1];
  const float ux = kx * float(G) + 0.5f * float(G), uy = ky * float(G) + 0.5f * float(G);
  if (!isfinite(ux) || !isfinite(uy)) return;
  const float half = 0.5f * float(W);
  const int mx0 = int(floorf(ux - half)) + 1, my0 = int(floorf(uy - half)) + 1;
  float wx[kMaxWidth], wy[kMaxWidth];
  int ix[kMaxWidth], iy[kMaxWidth];
  for (int a = 0; a < W; ++a) {
    const int mx = mx0 + a, my = my0 + a;
    wx[a] = lut_lookup(lut, res, edge, float(mx) - ux);
    wy[a] = lut_lookup(lut, res, edge, float(my) - uy);
    ix[a] = ((mx % G) + G) % G;
    iy[a] = (((my % G) + G) % G) * G;
  }
  const size_t per_grid = size_t(G) * G;
  for (int c = 0; c < coils; ++c) {
    const float2 v = data[size_t(c) * n + j];
    float* g = reinterpret_cast<float*>(grid + size_t(c) * per_grid);
    for (int a = 0; a < W; ++a) {
      const float vr = v.x * wy[a], vi = v.y * wy[a];
      for (int b = 0; b < W; ++b) {
        float* cell = g + 2 * size_t(iy[a] + ix[b]);
        atomicAdd(cell, vr * wx[b]);
        atomicAdd(cell + 1, vi * wx[b]);
      }
    }
  }
}

class GriddingCuda final : public Stage {
 public:
  explicit GriddingCuda(const GriddingParams& p) : p_(p) {
    if (p.width > kMaxWidth)
      throw ConfigError("gridding: kernel_width = " + std::to_string(p.width) + " exceeds the CUDA limit " +
                        std::to_string(kMaxWidth));
  }
  std::string name() const override { return "gridding"; }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    g_ = g;
    in_ext_ = input;
    const KaiserBesselLut lut(p_.width, p_.oversampling, p_.lut_resolution);
    G_ = oversampled_grid_size(g.matrix, p_.oversampling);
    res_ = lut.resolution();
    edge_ = res_ * p_.width / 2;
    lut_ = DeviceBuffer<float>(Extents{lut.table().size()});
    gpu::copy_to_device(lut_.data(), lut.table().data(), lut.table().size() * sizeof(float), ctx.stream);
    gpu::synchronize(ctx.stream);  // configure may synchronize; the table is then resident
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(G_), std::size_t(G_)};
    return out_ext_;
  }

  void process(const StageInput& in, View<cfloat> out, Context& ctx) override {
    expect_view("gridding", "input", in.data, in_ext_, Location::Device);
    expect_view("gridding", "output", out, out_ext_, Location::Device);
    const long n = long(g_.spokes) * g_.samples;
    if (in.traj.size() != std::size_t(n) * 2 || in.traj.loc != Location::Device)
      throw InputError("gridding: trajectory is not on the device or has the wrong size");
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    CUDA_CHECK(cudaMemsetAsync(out.data, 0, out.size() * sizeof(cfloat), stream));
    grid_samples<<<unsigned((n + 127) / 128), 128, 0, stream>>>(
        reinterpret_cast<const float2*>(in.data.data), in.traj.data, n, g_.coils, G_, p_.width, lut_.data(),
        res_, edge_, reinterpret_cast<float2*>(out.data));
    CUDA_CHECK_LAUNCH("grid_samples");
  }

 private:
  GriddingParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  int G_ = 0, res_ = 0, edge_ = 0;
  DeviceBuffer<float> lut_;
};

}  // namespace

std::unique_ptr<Stage> make_gridding_cuda(const GriddingParams& p) {
  return std::make_unique<GriddingCuda>(p);
}

}  // namespace radstream
