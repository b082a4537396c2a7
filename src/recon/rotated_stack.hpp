// A stack of stars whose partitions are turned against each other in plane (each partition its own angles,
// as golden-angle stacks often are): kz is still Cartesian, but the inverse DFT along kz no longer leaves one
// 2D problem per z position, since the in-plane trajectory differs from partition to partition. Its gridding
// goes through the 3D NUFFT instead (recon/bart_nufft.hpp, kz on its partition grid): each partition's
// samples weighted by the 2D density compensation of its own spokes (--dcf), the adjoint of every coil onto
// the N x N x P volume, the coils combined by root-sum-of-squares.
#pragma once
#include <string>
#include <vector>

#include "io/cfl.hpp"
#include "recon/recon_params.hpp"
#include "recon/stack_of_stars.hpp"

namespace radstream {

// The volume [P][N][N] (magnitude in the real part) of traj (BART [3 samples spokes]) and kspace (BART
// [1 samples spokes coils]) with the layout read from traj; p.gridding's kernel, p.density's weights, p's
// backend. Throws ConfigError/IoError naming the bad value.
std::vector<cfloat> rotated_stack_gridding(const StackLayout& layout, const CflArray& traj,
                                           const CflArray& kspace, int matrix, const ReconParams& p,
                                           const std::string& what);

}  // namespace radstream
