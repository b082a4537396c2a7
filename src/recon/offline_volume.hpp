// An offline volume from a stack of stars (recon/stack_of_stars.hpp) in BART's layout: the data turned into
// one 2D problem per z position, solved by the method asked for: gridding (any density compensation) and
// fbp with rss as one batch through one chain, cg-sense as one solve over the volume with coil maps
// [N N P C] or [N N 1 C] from --sens or estimated per partition, nlinv per partition through one configured
// chain; the image written as BART [N N P].
#pragma once
#include <string>
#include <vector>

#include "core/frame.hpp"
#include "recon/offline_recon.hpp"
#include "recon/recon_params.hpp"
#include "recon/stack_of_stars.hpp"

namespace radstream {

struct OfflineVolume {
  int matrix = 0, partitions = 0, coils = 0;
  std::vector<cfloat> image;      // [P][N][N], the combined image of each partition
  std::vector<cfloat> coil_maps;  // [coils][P][N][N] (BART's [N N P coils]) when wanted and used
};

// Coil maps BART [N N P C] (or [N N 1 C]: the same maps for every partition) as one [C][N][N] block per
// partition. Throws IoError naming the file and the extents expected, or a non-finite value.
std::vector<HostBuffer<cfloat>> read_volume_maps(const std::string& path, int N, int P, int C);

// True when `job` is a BART trajectory that is a stack of stars (kz on the partition grid, or --partitions
// above 1), for a caller that must choose its route before run_offline_recon reads the data. Throws
// ConfigError/IoError as stack_of_stars_layout does.
bool is_stack_of_stars(const OfflineRecon& job);

// frames: one per z position (stack_frames). sens: BART [N N P C] or [N N 1 C] coil maps, or none (the
// chain's method estimates them per partition when it reads maps). On the GPU the frames go up once; the
// volume is reconstructed `repeat` times, its median time logged. Throws ConfigError naming the bad value.
OfflineVolume reconstruct_volume(const std::vector<Frame>& frames, const ReconParams& params,
                                 const std::string& sens, bool want_maps, int repeat = 1);

// The stack of stars `t` (job.traj) with k-space `k` (job.kspace) and its layout: reconstructs and writes
// job.out
// (.cfl [N N P]) and, when asked, job.sens_out ([N N P coils]).
void run_offline_volume(const OfflineRecon& job, const ReconParams& params, const CflArray& t,
                        const CflArray& k, const StackLayout& layout);

}  // namespace radstream
