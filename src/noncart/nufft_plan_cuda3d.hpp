// The NUFFT plan on the GPU in 3D (stack of stars, 3D radial kooshball), with a host interface free of CUDA
// types; the 2D plan is NufftPlanCuda. Made once per geometry (kernel table, bin and subproblem buffers, the
// scan's scratch); set_points(d_traj) once per frame sorts the points into bins of 8^3 cells; spread (the
// adjoint: gridding) works per subproblem (up to 256 points of one bin) on a shared-memory copy of the bin
// and its kernel halo, then adds it to the grid; interp (the forward: degridding) gathers per point in bin
// order. Everything is enqueued on the plan's stream; nothing is allocated or synchronized after
// construction. Units and layouts as NufftPlanCpu with dims 3: points [n][3] in cycles per pixel, grids
// [batch][Gz][Gy][Gx] with x fastest. A point whose coordinate is not finite or lies beyond |u| >= 1e6 cells
// adds nothing and interpolates to 0, as on the CPU.
#pragma once
#include <array>
#include <cstddef>

#include "core/buffer.hpp"
#include "gpu/device_memory.hpp"
#include "noncart/nufft_kernel.hpp"

namespace radstream {

class NufftPlanCuda3d {
 public:
  // grid: cells per axis, x first (each even, >= 2); capacity: the most points; stream: cudaStream_t.
  // Throws ConfigError for a kernel or grid the plan does not handle.
  NufftPlanCuda3d(std::array<int, 3> grid, const NufftKernel& kernel, std::size_t capacity,
                  gpu::StreamRef stream);
  NufftPlanCuda3d(const NufftPlanCuda3d&) = delete;
  NufftPlanCuda3d& operator=(const NufftPlanCuda3d&) = delete;

  const std::array<int, 3>& grid() const { return grid_; }
  std::size_t grid_size() const { return std::size_t(grid_[0]) * grid_[1] * grid_[2]; }
  std::size_t points() const { return n_; }
  std::size_t capacity() const { return capacity_; }
  gpu::StreamRef stream() const { return stream_; }
  const KaiserBesselLut& lut() const { return lut_; }

  // d_traj [n][3] on the device (kept by reference until the next call). Throws InputError when n exceeds
  // the capacity.
  void set_points(const float* d_traj, std::size_t n);
  // d_samples [batch][n] -> d_grids [batch][Gz][Gy][Gx] (every cell written).
  void spread(const cfloat* d_samples, cfloat* d_grids, int batch);
  // d_grids [batch][Gz][Gy][Gx] -> d_samples [batch][n] (every sample written).
  void interp(const cfloat* d_grids, cfloat* d_samples, int batch);

 private:
  NufftKernel kernel_;
  KaiserBesselLut lut_;
  std::array<int, 3> grid_, bins_;
  int res_, edge_;
  std::size_t capacity_, n_ = 0, tile_bytes_ = 0;
  gpu::StreamRef stream_;
  const float* d_traj_ = nullptr;
  DeviceBuffer<float> d_lut_;
  DeviceBuffer<int> bin_of_, rank_, count_, offset_, sub_count_, sub_offset_, sub_bin_, sorted_;
  DeviceBuffer<unsigned char> scan_temp_;
};

}  // namespace radstream
