// CG-SENSE of a whole stack-of-stars volume in one solve. After the FFT along kz the z positions' problems
// share one trajectory, so they are one SENSE operator of P images (sense_operator_cpu.hpp's `images`):
// every CG iteration is one batched Toeplitz application over partitions x coils (one kernel for all, the
// trajectory and weights being the same) and one set of vector passes over the volume, instead of P solves
// of small launches one after the other.
// The CG runs over the volume, as BART's pics solves a stack of stars (one CG over [N N P]): its step sizes
// are the volume's. The system is block diagonal, so its solution is every partition's own solution (the
// converged volume equals P separate solves: tested); after a fixed count of iterations the partitions share
// one Krylov polynomial, where separate solves would each have their own.
// The Tikhonov weight is relative as in the 2D stage: lambda x sum of weights x the maps' peak power over the
// volume. No smoothness penalty, deadline or coil split here (the per-partition route keeps them).
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "gpu/handles.hpp"
#include "noncart/nufft_kernel.hpp"
#include "stages/cg_sense/cg_sense.hpp"

namespace radstream {

struct VolumeSenseShape {
  int matrix = 0, partitions = 0, coils = 0;
  std::size_t points = 0;  // spokes x samples of one partition
};

class VolumeSense {
 public:
  virtual ~VolumeSense() = default;
  virtual Location location() const = 0;
  // maps [P][C][N][N] at location(), kept by reference; peak_power: the largest sum over coils of |S|^2 in
  // the volume (coil_map_peak_power over each partition's maps, the largest).
  virtual void set_maps(const cfloat* maps, double peak_power) = 0;
  // data [P][C][points] and traj [points][2] (cycles per pixel) at location(); x [P][N][N]: the first guess
  // when warm, the volume after. On the GPU the work is enqueued on the solver's stream (the caller waits).
  virtual void solve(const cfloat* data, const float* traj, cfloat* x, bool warm) = 0;
  // |r| / |b| of the last solve (waits for the device).
  virtual double residual() = 0;
};

// Whether the volume route takes these settings (it has no smoothness penalty, deadline or coil split);
// the reason it does not, else empty.
std::string volume_sense_refusal(const CgSenseParams& p);

std::unique_ptr<VolumeSense> make_volume_sense_cpu(const VolumeSenseShape& shape, const CgSenseParams& p,
                                                   const NufftKernel& kernel, int threads);
// CUDA builds only (the build without CUDA throws ConfigError).
std::unique_ptr<VolumeSense> make_volume_sense_cuda(const VolumeSenseShape& shape, const CgSenseParams& p,
                                                    const NufftKernel& kernel, gpu::StreamRef stream);

}  // namespace radstream
