// The forward NUFFT's grid in 8 x 8 cell tiles: the layout the custom forward head writes and the interp
// reads, so that a W x W footprint (W <= 8) falls on 2-4 cache lines of 128 bytes instead of W rows' worth.
// Tile (ty, tx) of G / 8 x G / 8 is 64 consecutive cells, row by row. Included only by .cu files.
#pragma once
#include <cuda_runtime.h>

namespace radstream::gridlayout {

constexpr int kTile = 8;

// The offset of cell (y, x) of a G x G grid (G a multiple of 8).
__host__ __device__ __forceinline__ int tiled(int y, int x, int G) {
  return (((y >> 3) * (G >> 3) + (x >> 3)) << 6) + ((y & 7) << 3) + (x & 7);
}

}  // namespace radstream::gridlayout
