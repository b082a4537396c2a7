// A tracking aid for the interventional display: the brightest small blob inside the object (a catheter or
// needle tip filled with contrast, a marker), found by a top-hat - the mean over a box about the tip's size
// minus the mean of the box around it - maximised over the object's interior, then refined to the centroid of
// its excess. Only a blob that stands out by the object window's whole width counts as found, so the
// phantom's small features (0.1 above their background) and noise do not.
#pragma once
#include <span>

namespace radstream::display {

struct Tip {
  bool found = false;
  float x = 0.f, y = 0.f;  // pixel coordinates (x right, y down; pixel centres at integers)
  float contrast = 0.f;    // blob mean minus surround mean
  float threshold = 0.f;   // the contrast needed to count as found
};

// In the n x n magnitude image px (x fastest, row 0 at the top).
Tip find_tip(std::span<const float> px, int n);

// In a volume [depth][n][n] (a stack of stars' frame): the z position whose plane shows the tip with the most
// contrast (find_tip on each), its depth refined to the contrast-weighted centroid of its neighbours.
struct Tip3 {
  bool found = false;
  float x = 0.f, y = 0.f, z = 0.f;  // voxel coordinates (z: the volume's index, centres at integers)
  float contrast = 0.f, threshold = 0.f;
};
Tip3 find_tip_3d(std::span<const float> vol, int n, int depth);

}  // namespace radstream::display
