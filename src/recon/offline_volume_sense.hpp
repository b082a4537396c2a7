// The offline volume's CG-SENSE as one solve over [P][N][N] (volume_sense.hpp): the route reconstruct_volume
// takes for cg-sense unless a setting needs the per-partition chains (volume_sense_refusal).
#pragma once
#include <vector>

#include "core/frame.hpp"
#include "recon/backend.hpp"
#include "recon/recon_params.hpp"

namespace radstream {

struct VolumeSenseInput {
  const std::vector<Frame>* frames = nullptr;             // one per z position, one trajectory
  const std::vector<HostBuffer<cfloat>>* maps = nullptr;  // [C][N][N] per z position
  const cfloat* d_data = nullptr;                         // on the GPU: [P][C][points] already there
  const float* d_traj = nullptr;                          // on the GPU: [points][2]
};

// The volume [P][N][N] (magnitudes in the real parts, as a chain's image), solved `repeat` times (after one
// untimed solve when repeat > 1, which loads the kernels and plans); the median and extremes are logged.
// Throws ConfigError where the settings need the per-partition route.
std::vector<cfloat> solve_volume_sense(const VolumeSenseInput& in, const ReconParams& params, Backend backend,
                                       int repeat);

}  // namespace radstream
