// CPU gridding. Per frame, the kernel weights and wrapped grid indices of every sample are computed once and
// shared by all coils; coils are then spread in parallel, each into its own grid (no atomics needed).
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "gridding/gridding.hpp"
#include "gridding/kaiser_bessel.hpp"

namespace radstream {
namespace {

class GriddingCpu final : public Stage {
 public:
  explicit GriddingCpu(const GriddingParams& p) : p_(p) {}
  std::string name() const override { return "gridding"; }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    g_ = g;
    in_ext_ = input;
    lut_ = std::make_unique<KaiserBesselLut>(p_.width, p_.oversampling, p_.lut_resolution);
    G_ = oversampled_grid_size(g.matrix, p_.oversampling);
    const std::size_t n = std::size_t(g.spokes) * g.samples;
    const std::size_t W = std::size_t(p_.width);
    wx_ = HostBuffer<float>(Extents{n, W});
    wy_ = HostBuffer<float>(Extents{n, W});
    ix_ = HostBuffer<int>(Extents{n, W});
    iy_ = HostBuffer<int>(Extents{n, W});
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(G_), std::size_t(G_)};
    return out_ext_;
  }

  void process(const StageInput& in, View<cfloat> out, Context&) override {
    expect_view("gridding", "input", in.data, in_ext_, Location::Host);
    expect_view("gridding", "output", out, out_ext_, Location::Host);
    const long n = long(g_.spokes) * g_.samples;
    if (in.traj.size() != std::size_t(n) * 2)
      throw InputError(
          fmt::format("gridding: trajectory holds {} floats, expected {}", in.traj.size(), n * 2));
    const int W = p_.width, G = G_;
    const float* traj = in.traj.data;
    const float half = 0.5f * W;
    const KaiserBesselLut& lut = *lut_;

#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; ++j) {
      for (int axis = 0; axis < 2; ++axis) {
        const float k = traj[2 * j + axis];
        const float u = k * float(G) + 0.5f * float(G);  // grid coordinate of the sample
        const int m0 = int(std::floor(u - half)) + 1;
        float* w = (axis == 0 ? wx_.data() : wy_.data()) + j * W;
        int* idx = (axis == 0 ? ix_.data() : iy_.data()) + j * W;
        for (int a = 0; a < W; ++a) {
          const int m = m0 + a;
          w[a] = std::isfinite(u) ? lut(float(m) - u) : 0.f;
          const int wrapped = ((m % G) + G) % G;
          idx[a] = axis == 0 ? wrapped : wrapped * G;
        }
      }
    }

    const std::size_t per_coil_in = std::size_t(n);
    const std::size_t per_coil_grid = std::size_t(G) * G;
#pragma omp parallel for schedule(dynamic, 1)
    for (long c = 0; c < long(g_.coils); ++c) {
      cfloat* grid = out.data + c * per_coil_grid;
      std::memset(static_cast<void*>(grid), 0, per_coil_grid * sizeof(cfloat));
      const cfloat* d = in.data.data + c * per_coil_in;
      for (long j = 0; j < n; ++j) {
        const cfloat v = d[j];
        const float* wx = wx_.data() + j * W;
        const float* wy = wy_.data() + j * W;
        const int* ix = ix_.data() + j * W;
        const int* iy = iy_.data() + j * W;
        for (int a = 0; a < W; ++a) {
          cfloat* row = grid + iy[a];
          const float vr = v.real() * wy[a], vi = v.imag() * wy[a];
          for (int b = 0; b < W; ++b) {
            float* cell = reinterpret_cast<float*>(row + ix[b]);
            cell[0] += vr * wx[b];
            cell[1] += vi * wx[b];
          }
        }
      }
    }
  }

 private:
  GriddingParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  int G_ = 0;
  std::unique_ptr<KaiserBesselLut> lut_;
  HostBuffer<float> wx_, wy_;
  HostBuffer<int> ix_, iy_;
};

}  // namespace

std::unique_ptr<Stage> make_gridding_cpu(const GriddingParams& p) {
  return std::make_unique<GriddingCpu>(p);
}

}  // namespace radstream
