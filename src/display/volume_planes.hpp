// A volume [depth][n][n] (a stack of stars' frame, z = the partition axis) shown as three orthogonal planes
// through a cursor: axial (the x-y plane at the cursor's z), coronal (x across, z down, at the cursor's y)
// and sagittal (y across, z down, at the cursor's x); or, as a maximum intensity projection, each plane the
// brightest value along its normal. The coronal and sagittal planes are stretched to n x n (each z position
// n / depth rows tall, nearest neighbour), so that every plane fills a square view, the slab's depth
// from top to bottom.
#pragma once
#include <span>
#include <vector>

namespace radstream::display {

struct Cursor3 {
  int x = 0, y = 0, z = 0;  // voxel indices
};

struct VolumePlanes {
  int n = 0;
  std::vector<float> axial, coronal, sagittal;  // each n x n, row 0 at the top (coronal/sagittal: z = 0)
};

// Throws nothing: a cursor outside the volume is clamped into it; a volume of the wrong size gives empty
// planes.
VolumePlanes volume_planes(std::span<const float> vol, int n, int depth, Cursor3 c, bool mip);

// The row of a stretched (coronal or sagittal) plane that shows z position `z`: its middle row.
int stretched_row(int z, int n, int depth);

}  // namespace radstream::display
