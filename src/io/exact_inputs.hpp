// Inputs of the exact methods (recon --method fhd | cg-exact): an IMPATIENT folder (--impatient DIR) or BART
// .cfl files (--traj --kspace [--fieldmap --gradients --times]) turned into the exact model's units (k in
// cycles per pixel, voxel positions in pixels, grid axes slowest first), and the image writer (.cfl with the
// grid's extents fastest first; .png, a 3D volume as a montage of its slices).
#pragma once
#include <array>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/exact_model.hpp"

namespace radstream {

struct ExactInputs {
  ExactModel model;
  std::vector<cfloat> kdata;  // [slices][coils][model.samples()]
  int coils = 1;
  int slices = 1;           // 2D slices sharing the trajectory (BART k-space dim 4), each its own problem
  std::vector<float> mask;  // per voxel (IMPATIENT), empty when none
  std::string source;       // for the log
};

// IMPATIENT: the voxel grid is found from ix/iy/iz (each coordinate's count and stride; a regular spacing of
// 1/n of the field of view is required), k and positions scaled by each axis's n. Throws IoError/InputError.
ExactInputs load_impatient(const std::string& dir);

struct CflExactArgs {
  std::string traj, kspace, fieldmap, gradients, times;
  int matrix = 0, dims = 2;
};
// BART: traj [3 readout spokes] in +-N/2 units, kspace [1 readout spokes coils (slices)]; fieldmap [N N (N)]
// (Hz, real part), gradients [N N (N) 3] (Hz across a voxel along x, y, z), times [1 readout spokes] or [M]
// (s).
ExactInputs load_cfl_exact(const CflExactArgs& a);

// An n^3 model from points given as (x, y, z) in cycles per pixel (the 3D phantom's trajectory): grid axes
// are slowest first, so z pairs with axis 0 and x with axis 2.
ExactModel exact_model_3d(const std::vector<std::array<float, 3>>& k_xyz, int n);

// image: model.voxels() values. Throws ConfigError for other extensions, IoError on failure.
void write_exact_image(const std::string& path, const std::vector<cfloat>& image, const ExactGrid& grid);

}  // namespace radstream
