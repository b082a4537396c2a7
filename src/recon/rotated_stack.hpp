// A stack of stars whose partitions are turned against each other in plane (each partition its own angles,
// as golden-angle stacks often are): kz is still Cartesian, but the inverse DFT along kz no longer leaves one
// 2D problem per z position, since the in-plane trajectory differs from partition to partition. Its gridding
// goes through the 3D NUFFT instead (recon/bart_nufft.hpp, kz on its partition grid): each partition's
// samples weighted by the 2D density compensation of its own spokes (--dcf), the adjoint of every coil onto
// the N x N x P volume, the coils combined by root-sum-of-squares. Its CG-SENSE runs on the 3D SENSE operator
// (noncart/sense_operator_3d.hpp) with the coil maps given, on the CPU.
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

// The CG-SENSE volume [P][N][N] (magnitude in the real part): (E^H E + lambda_abs I) x = E^H y with E the 3D
// SENSE operator over every sampled spoke, maps[z] [coils][N][N] for each z position, p.cg's iterations and
// lambda (relative as cg-sense's: times the sample count and the maps' peak power). Throws ConfigError for
// settings it does not take (smoothness, a coil split, a deadline).
std::vector<cfloat> rotated_stack_cg_sense(const StackLayout& layout, const CflArray& traj,
                                           const CflArray& kspace, int matrix,
                                           const std::vector<HostBuffer<cfloat>>& maps, const ReconParams& p,
                                           const std::string& what);

}  // namespace radstream
