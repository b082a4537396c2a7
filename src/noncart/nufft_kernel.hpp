// The interpolation kernel a NUFFT plan is made with, and the deapodization (apodization) factors that undo
// it in the image: one set of numbers shared by the gridding stage, the deapodize stages and the operators.
#pragma once
#include <vector>

#include "noncart/kaiser_bessel.hpp"

namespace radstream {

struct NufftKernel {
  int width = 4;              // Kaiser-Bessel width W in grid cells (the plans take 2..16; recon: even)
  double oversampling = 2.0;  // grid oversampling sigma
  int lut_resolution = 1024;  // table entries per grid cell
};

// Per image index i = 0 .. matrix-1 (position p = i - matrix/2) of one axis: the wrapped grid index of p on a
// grid of G cells and the factor (-1)^p / c_hat(p / G) that turns the inverse DFT of the spread grid into the
// image (the (-1)^p undoes the grid's centring at G/2, G even). The forward NUFFT pre-multiplies by the same
// factor before its DFT.
struct AxisApodization {
  std::vector<int> src;
  std::vector<float> factor;
};
AxisApodization make_axis_apodization(int matrix, int grid, const KaiserBesselLut& lut);

}  // namespace radstream
