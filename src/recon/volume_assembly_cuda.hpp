// A stack of stars' volume window sorted on the GPU (the CUDA twin of VolumeAssembler's arithmetic): the
// window's spokes gathered from the ring's device mirror, each placed at its step slot and partition with the
// partition's centring phase, one batched cuFFT along kz, and the result split into one frame per z position
// [P][coils][W][samples] with the z position's phase and 1/sqrt(P), beside the slots' trajectory. The layout
// (which spoke goes where) is VolumeAssembler's, computed on the host from the spokes' headers. Host header:
// no CUDA types; a build without CUDA has a stub that throws.
#pragma once
#include <memory>
#include <vector>

#include "core/frame.hpp"
#include "recon/volume_chain.hpp"

namespace radstream {

class VolumeAssemblerCuda {
 public:
  // plane: one z position's geometry (W spokes); on GPU `device`. Throws CudaError when memory is short.
  VolumeAssemblerCuda(const Geometry& plane, int partitions, int device);
  ~VolumeAssemblerCuda();
  VolumeAssemblerCuda(const VolumeAssemblerCuda&) = delete;
  VolumeAssemblerCuda& operator=(const VolumeAssemblerCuda&) = delete;

  // Gathers `raw_spokes` spokes through `gather` (VolumeChain::Gather) and sorts them into the z positions'
  // frames; the host waits for it. False when the spokes were gone. Throws InputError as volume_layout.
  bool assemble(int raw_spokes, const VolumeChain::Gather& gather, std::vector<SpokeHeader>& heads,
                VolumeAssembler::Counts& counts);
  const cfloat* frame(int z) const;  // z position z's data [coils][W][samples] on the GPU
  const float* traj() const;         // the slots' trajectory [W][samples][2] on the GPU
  std::size_t frame_values() const;
  std::size_t traj_values() const;
  // z position z's frame on the host (its data and trajectory), for a chain that reads it there.
  void download(int z, Frame& f) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace radstream
