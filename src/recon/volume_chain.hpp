// A stack-of-stars stream's frame is a volume: a window of spokes over every kz partition (each in-plane
// angle acquired in all P partitions, in any order). VolumeAssembler sorts such a window into its in-plane
// steps (idx.kspace_encode_step_1) and partitions (idx.kspace_encode_step_2) and turns it, by the inverse
// DFT along kz (one batched FFT), into one 2D radial frame per z position, as recon/stack_of_stars.hpp does
// for BART's layout; VolumeChain reconstructs those frames into the volume [P][N][N]: by gridding or fbp
// with rss as one batch through one chain (every stage's launch over the z positions' coils together), by
// cg-sense, unless a setting needs the per-partition chains, as one solve over the volume
// (VolumeSenseLive), otherwise each z position through its own chain (its own warm start, coil maps and
// state, as a slice of a multi-slice stream has).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/frame.hpp"
#include "fft/fftw_plan.hpp"
#include "recon/recon_chain.hpp"

namespace radstream {

// A window whose partitions lie at different in-plane angles for one step (a rotated stack): the z positions'
// split does not apply (VolumeChain then takes the window through the 3D NUFFT: recon/rotated_window.hpp).
class RotatedPartitions : public InputError {
 public:
  using InputError::InputError;
};

// Where each spoke of a window goes in its volume: the W newest in-plane steps among the window's spokes
// (oldest first), each spoke's step slot, and each slot's spoke whose trajectory its z positions take.
struct VolumeLayout {
  std::vector<std::uint64_t> steps;
  std::vector<int> slot_of;        // per spoke of the window: its slot, -1 when older than the volume's steps
  std::vector<int> line_of;        // per slot: a spoke of its step (-1: none came)
  std::vector<std::uint8_t> have;  // per slot and partition: a spoke came
  int missing = 0;  // (step, partition) pairs of the volume that did not arrive: zeros in k-space
};
// Into `l` (its buffers reused volume after volume). same_line(a, b): spokes a and b of the window lie at the
// same in-plane angle. Throws RotatedPartitions naming the spoke when partitions of one step do not (a
// rotated stack), InputError when the window is empty.
void volume_layout(std::span<const std::uint64_t> spoke_index, std::span<const std::uint16_t> partition,
                   int W, int P, const std::function<bool(int, int)>& same_line, VolumeLayout& l);

// The spoke whose trajectory slot j takes (a slot no spoke came for borrows slot 0's: its data are zeros).
int volume_line(const VolumeLayout& l, int j);

// The geometry of a volume's z positions reconstructed as one batch: the plane's coils for each of the P
// images (Geometry::images), [P][coils][spokes][samples].
Geometry batched_geometry(const Geometry& plane, int partitions);
// Whether a method's chain takes the z positions as one batch (its stages work channel by channel and its
// coil combination image by image: gridding and fbp with rss, unless recon.batch_partitions is false), not
// one chain per z position.
bool batches_partitions(const ReconParams& p);

class VolumeAssemblerCuda;
class VolumeSenseLive;

class VolumeAssembler {
 public:
  // plane: the 2D geometry of one z position (its spokes: the window's in-plane steps W); P partitions.
  // batched: assemble() gives one frame of batched_geometry (the z positions its images), else P frames.
  void configure(const Geometry& plane, int partitions, bool batched = false);
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
  bool batched() const { return batched_; }

 private:
  Geometry plane_;
  int P_ = 1;
  bool batched_ = false;
  VolumeLayout layout_;
  HostBuffer<cfloat> kz_;           // [coils][W][samples][P]: the batched transform's input, P fastest
  std::vector<cfloat> pre_, post_;  // the centring phases of the partitions and of the z positions
  FftwPlan plan_;
  void prepare_host();  // kz_ and plan_, on the first window assembled on the host
};

class VolumeChain {
 public:
  VolumeChain(const ReconParams& params, Backend backend, const Registry& registry);
  ~VolumeChain();
  // plane: one z position's geometry. Throws ConfigError as a chain's configure does.
  void configure(const Geometry& plane, int partitions);
  // The volume [P][N][N] (magnitudes in the real part) of the window `raw`.
  View<const cfloat> reconstruct(const Frame& raw);
  // The same from a window already on the GPU (the CUDA backend): `gather` enqueues the copy of its R spokes
  // into d_data [coils][R][samples] and d_traj [R][samples][2] on `stream` and returns false when they are
  // gone, then fills `heads` with their headers (step, partition, angle) while it holds them. Sorted, turned
  // along kz and split into the z positions' frames on the GPU; each z position's chain takes its frame
  // there.
  using Gather = std::function<bool(cfloat* d_data, float* d_traj, gpu::StreamRef stream,
                                    std::vector<SpokeHeader>& heads)>;
  // `release` is called once the window has been sorted into the z positions' frames (the assembly's
  // stream synchronized): the ring's spokes are free again before the z positions are reconstructed.
  View<const cfloat> reconstruct_device(int raw_spokes, const Gather& gather,
                                        const std::function<void()>& release);
  Backend backend() const { return backend_; }
  const VolumeAssembler::Counts& counts() const { return counts_; }
  int partitions() const { return assembler_.partitions(); }
  const Geometry& plane() const { return plane_; }
  // Whether the stream's partitions were found turned against each other: its volumes then come from the
  // window on the host through the 3D NUFFT (reconstruct_device returns an empty view from then on).
  bool rotated() const { return rotated_; }
  // The chains' stage times summed over the partitions of the last volume.
  const std::vector<StageTiming>& timings() const { return timings_; }

 private:
  ReconParams params_;
  Backend backend_;
  const Registry& registry_;
  Geometry plane_;
  VolumeAssembler assembler_;
  // One per z position, or one for all of them (batches_partitions), or none (sense_).
  std::vector<std::unique_ptr<ReconChain>> chains_;
  std::unique_ptr<VolumeSenseLive> sense_;       // cg-sense as one solve over the volume
  std::unique_ptr<VolumeAssemblerCuda> device_;  // the GPU's assembly (made on first use)
  std::vector<SpokeHeader> heads_;
  void collect(std::size_t z, View<const cfloat> img);  // a z position's image and stage times
  void configure_all(const Geometry& plane);            // every chain, several at a time
  View<const cfloat> volume_view() const;
  bool rotated_ = false;
  std::vector<HostBuffer<cfloat>> rotated_maps_;  // recon.sens for cg-sense of a rotated stack (read once)
  void note_rotated(const RotatedPartitions& e);
  View<const cfloat> reconstruct_rotated(const Frame& raw);
  std::vector<Frame> frames_;
  std::vector<cfloat> volume_;
  std::vector<StageTiming> timings_;
  VolumeAssembler::Counts counts_;
};

}  // namespace radstream
