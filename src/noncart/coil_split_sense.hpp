// CG-SENSE with the coils of one frame split across partitions (real-time NLINV's channel split,
// Gadgetron's per-GPU SENSE): partition p holds coils [C p / P, C (p+1) / P), their maps and data, and its
// own SENSE operator. Each partition forms its coils' E_p^H y and E_p^H E_p x; one allreduce_sum per
// application (reducer.hpp) turns them into the whole frame's, so every partition runs the same CG iterates
// (iter/conjugate_gradient.hpp) on the same sums and partition 0's image is the answer:
//   b = sum_p E_p^H y_p  (one reduction),  then per iteration  q = sum_p E_p^H E_p p + lambda_abs p  (one).
// lambda is relative, as in the cg_sense stage: lambda_abs = lambda * sum_j w_j * max_x sum_c |S_c(x)|^2.
// Backends: the host (partitions are threads, the host reduce group: CI's twin of the algorithm) and CUDA
// (one GPU per partition, NCCL). Everything is allocated at construction; solve() starts one thread per
// partition but the iterations allocate nothing.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/error.hpp"
#include "gpu/handles.hpp"
#include "iter/conjugate_gradient.hpp"
#include "noncart/nufft_kernel.hpp"

namespace radstream {

struct CoilSplitOptions {
  int iterations = 10;
  double lambda = 1e-2;       // relative (see above)
  bool toeplitz = true;       // each partition's E_p^H E_p through its PSF kernel
  bool warm_start = false;    // start from the previous solve's image (zeros the first time)
  double timeout_s = 30.0;    // a reduction (host) or a whole solve (GPU) that takes longer aborts the group
  bool psf_per_solve = true;  // each solve remakes its partition's PSF kernel from the trajectory, as the
                              // live stage does per frame (false: made once in set_frame)
};

class CoilSplitSense {
 public:
  virtual ~CoilSplitSense() = default;
  // Host arrays: traj [points][2] (cycles/pixel), data [coils][points], maps [coils][N][N]. Each partition
  // takes (uploads) its share. maps_version (the frame's coil-map version, FrameContext::coil_maps): when it
  // is nonzero and the same as the previous frame's, the maps are unchanged and not taken again; 0: always.
  virtual void set_frame(const float* traj, const cfloat* data, const cfloat* maps,
                         std::uint64_t maps_version = 0) = 0;
  // Runs the CG on every partition; throws the first partition's failure (the others are aborted, not left
  // waiting).
  virtual CgReport solve() = 0;
  // Partition 0's image [N][N], to the host.
  virtual void image(cfloat* out) = 0;
  // The CUDA split only (else ConfigError): the frame from device arrays on the calling thread's current GPU
  // (traj [points][2], data [coils][points], maps [coils][N][N]), ready once the work already enqueued on
  // `stream` is done; peak_power: the maps' max over pixels of sum_c |S_c|^2. Each partition copies its share
  // GPU to GPU (no trip through the host: the live cg_sense stage's path).
  // maps_version as in set_frame.
  virtual void set_frame_device(const float*, const cfloat*, const cfloat*, double, gpu::StreamRef,
                                std::uint64_t = 0) {
    throw ConfigError("coil split: device frames need the CUDA split");
  }
  // Partition 0's image to d_out (device memory of any GPU), complete on return.
  virtual void image_device(cfloat*) { throw ConfigError("coil split: device images need the CUDA split"); }
  virtual int parts() const = 0;
  // How the partitions' sums travel: "host" (threads), "nccl" (GPUs), "staged" (GPUs, through host memory).
  virtual std::string reduce_kind() const = 0;
  // The coils of partition p: [first, last).
  virtual std::pair<int, int> coils_of(int p) const = 0;
};

// parts host threads (1 <= parts <= coils), each operator with `threads` OpenMP threads (0: cores / parts).
std::unique_ptr<CoilSplitSense> make_coil_split_sense_cpu(int matrix, int coils, std::size_t points,
                                                          const NufftKernel& kernel,
                                                          const CoilSplitOptions& o, int parts,
                                                          int threads = 0);
// One partition per listed GPU, reduced over NCCL; through host memory (logged) where NCCL cannot serve: no
// libnccl.so.2, or a GPU listed twice (several partitions on one GPU: the split's test on a one-GPU machine).
// CUDA builds only; else throws ConfigError.
std::unique_ptr<CoilSplitSense> make_coil_split_sense_cuda(int matrix, int coils, std::size_t points,
                                                           const NufftKernel& kernel,
                                                           const CoilSplitOptions& o,
                                                           const std::vector<int>& devices);

}  // namespace radstream
