// A stack of stars: radial spokes in kx/ky, Cartesian phase encoding in kz. In BART's layout the trajectory
// is [3 samples spokes] with every spoke's kz on the integer partition grid (-P/2 .. P/2-1 for a P-deep
// volume, BART units), the partitions in any order. Because kz is Cartesian, an inverse DFT along kz turns
// the data into P independent 2D radial problems (one per z position) with the same in-plane trajectory,
// which every 2D method (gridding, cg-sense, nlinv) then solves as it solves a slice.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/frame.hpp"
#include "io/cfl.hpp"

namespace radstream {

struct StackLayout {
  int partitions = 1;  // P, the depth of the volume
  int samples = 0;
  int spokes_per_partition = 0;  // the in-plane spokes, the same in every partition that is sampled
  // For each partition index p (kz = p - P/2), the input spokes that belong to it in input order (empty: the
  // partition was not sampled and counts as zeros).
  std::vector<std::vector<long>> spokes_of;
  // Partitions turned against each other in plane (each its own angles): kz is still Cartesian, but no
  // longer one 2D problem per z position. `rotation` names the first spoke that differs.
  bool rotated = false;
  std::string rotation;
};

// The layout of a BART trajectory [3 samples spokes] in BART units (+-N/2 in plane). partitions: the volume
// depth asked for (--partitions), or -1 to read it from the trajectory (the smallest even P whose grid holds
// every kz). Returns nullopt for a flat trajectory (every kz 0) with partitions -1 or 1. Throws ConfigError
// naming the spoke and its kz when kz varies along a spoke, is not a whole number, lies outside the P grid,
// or when partitions hold different numbers of spokes. Partitions at different in-plane angles make a rotated
// layout (gridding reconstructs it through the 3D NUFFT: recon/rotated_stack.hpp).
std::optional<StackLayout> stack_of_stars_layout(const CflArray& traj, int partitions,
                                                 const std::string& what);

// One 2D frame per z position [0, P): the in-plane trajectory (cycles per pixel of matrix N) and the data
// after the inverse DFT along kz, scaled by 1/sqrt(P) as BART's unitary NUFFT scales a 3D transform. kspace:
// BART [1 samples spokes coils]. Throws IoError on mismatched or non-finite input, ConfigError for a rotated
// layout (it has no such frames).
std::vector<Frame> stack_frames(const StackLayout& layout, const CflArray& traj, const CflArray& kspace,
                                int matrix, const std::string& what);

}  // namespace radstream
