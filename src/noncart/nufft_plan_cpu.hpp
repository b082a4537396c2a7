// The NUFFT plan on the CPU (cuFINUFFT's shape): made once per geometry with its Kaiser-Bessel table;
// set_points(traj) once per frame computes each point's kernel weights and wrapped grid indices per axis;
// spread (the adjoint of interpolation: gridding) and interp (the forward: degridding) share them.
//
// Units: a point's coordinate k is in cycles per pixel of the reconstructed matrix (a spoke spans [-0.5,
// 0.5)); its grid coordinate on an axis of G cells is u = k G + G/2, and the grid is periodic (indices wrap),
// matching the DFT that follows. Grids are [batch][Gz][Gy][Gx] with x fastest; points [n][dims] with x first.
// A point whose coordinate is not finite or lies beyond |u| >= 1e6 cells gets zero weights (it adds nothing
// and interpolates to 0) instead of an out-of-range index.
#pragma once
#include <array>
#include <cstddef>
#include <memory>

#include "core/buffer.hpp"
#include "noncart/nufft_kernel.hpp"

namespace radstream {

class NufftPlanCpu {
 public:
  // dims 1..3; grid: cells per axis (x first; unused axes ignored); capacity: the most points set_points
  // takes.
  NufftPlanCpu(int dims, std::array<int, 3> grid, const NufftKernel& kernel, std::size_t capacity);

  int dims() const { return dims_; }
  const std::array<int, 3>& grid() const { return grid_; }
  std::size_t grid_size() const { return grid_size_; }  // cells of one grid
  std::size_t points() const { return n_; }
  std::size_t capacity() const { return capacity_; }
  const KaiserBesselLut& lut() const { return *lut_; }

  // traj [n][dims] (cycles per pixel). Throws InputError when n exceeds the capacity.
  void set_points(const float* traj, std::size_t n);
  // samples [batch][n] -> grids [batch][grid_size] (each grid cleared first).
  void spread(const cfloat* samples, cfloat* grids, int batch) const;
  // grids [batch][grid_size] -> samples [batch][n].
  void interp(const cfloat* grids, cfloat* samples, int batch) const;

 private:
  int dims_;
  std::array<int, 3> grid_{1, 1, 1};
  std::size_t grid_size_ = 1;
  int width_;
  std::size_t capacity_, n_ = 0;
  std::unique_ptr<KaiserBesselLut> lut_;
  std::array<HostBuffer<float>, 3> w_;  // [n][W] kernel weight per axis
  std::array<HostBuffer<int>, 3> idx_;  // [n][W] wrapped index times the axis stride

  // Point j's taps per axis (x, y, z): W weights and indices, or one tap (1, 0) on an axis it does not have.
  struct Taps {
    const float* w[3];
    const int* i[3];
    int width[3];
  };
  Taps taps(std::size_t j) const;
};

}  // namespace radstream
