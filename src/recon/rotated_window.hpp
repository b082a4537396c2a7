// A stack-of-stars stream whose partitions are turned against each other in plane (each partition its own
// angles): its window has no split into one 2D problem per z position (VolumeAssembler refuses it, throwing
// RotatedPartitions), so it goes, as `recon` takes such a stack, through the 3D NUFFT
// (recon/rotated_stack.hpp): the window in BART's layout (kz on the partition grid), gridded with each
// partition's own 2D density compensation, or solved by the 3D SENSE operator with given coil maps
// (recon.sens). It runs where rotated_stack runs (gridding on the chosen backend's 3D NUFFT, CG-SENSE on the
// CPU) and needs the window on the host.
#pragma once
#include <utility>
#include <vector>

#include "core/frame.hpp"
#include "io/cfl.hpp"
#include "recon/recon_params.hpp"

namespace radstream {

// The window `raw` (R spokes of every partition: data [coils][R][samples], traj [R][samples][2] in cycles per
// pixel, each spoke's partition) as BART's traj [3 samples R] (in-plane +-N/2, kz = partition - P/2) and
// kspace [1 samples R coils].
std::pair<CflArray, CflArray> window_as_bart(const Frame& raw, int N, int P);

// The volume [P][N][N] (magnitudes in the real parts) of a rotated window by gridding, or by cg-sense with
// `maps` (one [coils][N][N] per z position, from recon.sens). Throws ConfigError naming a method that needs
// one 2D problem per z position (cg-sense without maps, nlinv), InputError as the layout does (partitions
// holding different numbers of spokes: a lost spoke).
std::vector<cfloat> reconstruct_rotated_window(const Frame& raw, int N, int P, const ReconParams& p,
                                               const std::vector<HostBuffer<cfloat>>& maps);

}  // namespace radstream
