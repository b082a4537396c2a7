// Kaiser-Bessel gridding: spreads each (density-weighted) sample onto the sigma-oversampled Cartesian grid
// with a W x W separable kernel taken from a lookup table. The grid is periodic (indices wrap), matching the
// discrete Fourier transform that follows. Output [coils][G][G], x fastest, grid index g <-> k = (g - G/2) /
// G.
#pragma once
#include <memory>

#include "noncart/density_weights.hpp"
#include "noncart/nufft_kernel.hpp"
#include "stage/stage.hpp"

namespace radstream {

struct GriddingParams {
  int width = 4;              // kernel width W in grid cells (even)
  double oversampling = 2.0;  // grid oversampling sigma
  int lut_resolution = 1024;  // kernel table entries per grid cell

  NufftKernel kernel() const { return {width, oversampling, lut_resolution}; }

  template <class V>
  void visit(V& v) {
    v.field("kernel_width", width, 2, 16, "Kaiser-Bessel kernel width W in grid cells (even)");
    v.field("oversampling", oversampling, 1.125, 4.0, "grid oversampling sigma (1.25 works with W >= 4)");
    v.field("lut_resolution", lut_resolution, 16, 1 << 16, "kernel lookup-table entries per grid cell");
  }
};

// Memory (StageSizes): every coil's oversampled grid, which it writes (density_gridding the same).
inline double gridding_bytes(const StageSizes& s, const GriddingParams& p) {
  return s.grid(p.oversampling);
}

std::unique_ptr<Stage> make_gridding_cpu(const GriddingParams& p);
std::unique_ptr<Stage> make_gridding_cuda(const GriddingParams& p);  // CUDA builds only

// Density compensation and gridding in one stage ("density_gridding": the density stage's weights, then the
// gridding stage's spread, with the same output). On the GPU the weights [spokes][samples] are computed once
// and applied inside the spread as each sample is staged, so the weighted copy of every coil's samples (a
// read and a write of the whole frame) is never made; the CPU twin weights a copy, then spreads it.
std::unique_ptr<Stage> make_density_gridding_cpu(DcfMethod dcf, const GriddingParams& p);
std::unique_ptr<Stage> make_density_gridding_cuda(DcfMethod dcf,
                                                  const GriddingParams& p);  // CUDA builds only

}  // namespace radstream
