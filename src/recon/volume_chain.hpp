// A stack-of-stars stream's frame is a volume: a window of spokes over every kz partition (each in-plane
// angle acquired in all P partitions, in any order). VolumeAssembler sorts such a window into its in-plane
// steps (idx.kspace_encode_step_1) and partitions (idx.kspace_encode_step_2) and turns it, by the inverse
// DFT along kz (one batched FFT), into one 2D radial frame per z position, as recon/stack_of_stars.hpp does
// for BART's layout; VolumeChain reconstructs those frames, each z position through its own chain (its own
// warm start, coil maps and state, as a slice of a multi-slice stream has), into the volume [P][N][N].
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/frame.hpp"
#include "fft/fftw_plan.hpp"
#include "recon/recon_chain.hpp"

namespace radstream {

class VolumeAssembler {
 public:
  // plane: the 2D geometry of one z position (its spokes: the window's in-plane steps W); P partitions.
  void configure(const Geometry& plane, int partitions);
  struct Counts {
    std::uint64_t first_step = 0, last_step = 0;  // the window's in-plane spoke indices
    int missing = 0;  // (step, partition) pairs of the window that did not arrive: zeros in k-space
  };
  // raw: the newest spokes of the stream (W x P of them when none was lost), with their indices and
  // partitions; the W newest in-plane steps among them make the volume. Throws InputError naming the spoke
  // when partitions of one step lie at different in-plane angles (a rotated stack: not streamed), or when
  // the window holds no step.
  Counts assemble(const Frame& raw, std::vector<Frame>& out);
  int partitions() const { return P_; }

 private:
  Geometry plane_;
  int P_ = 1;
  HostBuffer<cfloat> kz_;           // [coils][W][samples][P]: the batched transform's input, P fastest
  std::vector<cfloat> pre_, post_;  // the centring phases of the partitions and of the z positions
  FftwPlan plan_;
};

class VolumeChain {
 public:
  VolumeChain(const ReconParams& params, Backend backend, const Registry& registry);
  // plane: one z position's geometry. Throws ConfigError as a chain's configure does.
  void configure(const Geometry& plane, int partitions);
  // The volume [P][N][N] (magnitudes in the real part) of the window `raw`.
  View<const cfloat> reconstruct(const Frame& raw);
  const VolumeAssembler::Counts& counts() const { return counts_; }
  int partitions() const { return assembler_.partitions(); }
  const Geometry& plane() const { return plane_; }
  // The chains' stage times summed over the partitions of the last volume.
  const std::vector<StageTiming>& timings() const { return timings_; }

 private:
  ReconParams params_;
  Backend backend_;
  const Registry& registry_;
  Geometry plane_;
  VolumeAssembler assembler_;
  std::vector<std::unique_ptr<ReconChain>> chains_;  // one per z position
  std::vector<Frame> frames_;
  std::vector<cfloat> volume_;
  std::vector<StageTiming> timings_;
  VolumeAssembler::Counts counts_;
};

}  // namespace radstream
