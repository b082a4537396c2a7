// The NUFFT plan on the GPU (2D), with a host interface free of CUDA types. Made once per geometry (tables,
// sort buffers, kernel attributes); set_points(d_traj) once per frame enqueues the tile sort; spread (the
// adjoint: gridding as a per-tile gather) and interp (the forward: degridding) share it. Everything is
// enqueued on the plan's stream; nothing is allocated or synchronized after construction.
// Units and layouts as NufftPlanCpu: points [n][2] in cycles per pixel, grids [batch][G][G] with x fastest.
#pragma once
#include <cstddef>

#include "core/buffer.hpp"
#include "gpu/device_memory.hpp"
#include "noncart/nufft_kernel.hpp"
#include "noncart/ramp_weight.hpp"

namespace radstream {

class NufftPlanCuda {
 public:
  // grid: G cells per axis (even); capacity: the most points; stream: cudaStream_t for all work.
  // Throws ConfigError for a kernel or grid the CUDA plan does not handle.
  NufftPlanCuda(int grid, const NufftKernel& kernel, std::size_t capacity, gpu::StreamRef stream);
  NufftPlanCuda(const NufftPlanCuda&) = delete;
  NufftPlanCuda& operator=(const NufftPlanCuda&) = delete;

  int grid() const { return G_; }
  std::size_t grid_size() const { return std::size_t(G_) * G_; }
  std::size_t points() const { return n_; }
  gpu::StreamRef stream() const { return stream_; }
  const KaiserBesselLut& lut() const { return lut_; }

  // d_traj [n][2] on the device. Throws InputError when n exceeds the capacity.
  void set_points(const float* d_traj, std::size_t n);
  // d_samples [batch][n] -> d_grids [batch][G][G] (every cell written). weights (optional): each sample's
  // weight (density compensation: an array [n] on the device, or the radial ramp computed from the points,
  // which must then be [spokes][samples]), applied as its values are staged, so that the weighted samples
  // are never written out.
  void spread(const cfloat* d_samples, cfloat* d_grids, int batch, const SampleWeights& weights = {});
  // d_grids [batch][G][G] -> d_samples [batch][n]; tiled: each grid in 8 x 8 cell tiles (grid_layout.cuh: the
  // custom forward head's output; G a multiple of 8, W <= 8).
  void interp(const cfloat* d_grids, cfloat* d_samples, int batch, bool tiled = false);
  // Deterministic spread (off by default): every cell adds its samples in sample order, with no atomics, so
  // repeated frames give the same bits (the coil split needs that), for spreads of up to max_batch coils.
  // Allocates its sort and partial-sum buffers (4 capacity / 256 + tiles chunks x max_batch x 2 KiB): call it
  // before the frames, not per frame.
  void set_deterministic(bool on, int max_batch = 1);

 private:
  NufftKernel kernel_;
  KaiserBesselLut lut_;
  int G_, NT_, res_, edge_;
  std::size_t capacity_, n_ = 0;
  gpu::StreamRef stream_;
  const float* d_traj_ = nullptr;
  DeviceBuffer<float> d_lut_;
  DeviceBuffer<int> tally_;  // the tile count's atomics and, at [tiles], its ticket; zero between frames
  DeviceBuffer<int> count_, offset_, chunk_offset_, tile_of_, rank_, sorted_;
  DeviceBuffer<int> chunk_info_;  // an int4 a chunk (the gathers' tile, first entry, entries, shared flag)
  bool det_ = false;
  int det_batch_ = 0, sample_bits_ = 0, tile_bits_ = 0;
  DeviceBuffer<unsigned long long> keys_, keys_sorted_;  // (tile, sample) keys, before and after the sort
  DeviceBuffer<int> sorted_det_;
  DeviceBuffer<cfloat> partial_;  // deterministic mode: each shared tile's chunks' partial sums
  DeviceBuffer<unsigned char> sort_temp_;
};

}  // namespace radstream
