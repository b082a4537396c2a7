// The CUDA NUFFT plan's constants and device helpers (tiles, the LUT lookup, a sample's footprint), shared by
// its tile sort (nufft_tile_sort.cuh) and its gather and interpolation kernels, and by the 3D plan. Included
// by nufft_plan_cuda.cu and nufft_plan_cuda3d.cu; everything here is internal to each translation unit.
#pragma once
#include <cuda_runtime.h>
#include <cmath>

namespace radstream {
namespace {

constexpr int kMaxWidth = 16;
constexpr int kT = 16;  // tile edge in grid cells; one thread per cell
constexpr int kThreads = kT * kT;
constexpr int kChunk = kThreads;  // list entries per block (staged in shared memory at once); a short
                                  // chunk keeps the centre tiles' serial loop (the critical path) short
constexpr int kMaxTiles =
    16384;  // G = 2048; the tile count keeps a block's tallies in shared memory (64 KiB)

__device__ __forceinline__ float lut_lookup(const float* __restrict__ lut, int res, int edge, float t) {
  const float x = fabsf(t) * float(res);
  const int i = int(x);
  if (i >= edge) return 0.f;
  const float f = x - float(i);
  const float a = __ldg(lut + i), b = __ldg(lut + i + 1);
  return a + f * (b - a);
}

__device__ __forceinline__ int wrap(int m, int G) {
  return ((m % G) + G) % G;
}

struct Footprint {
  int mx0, my0;  // first cell (unwrapped)
  float ux, uy;  // grid coordinates of the sample
  bool valid;
};

__device__ __forceinline__ Footprint footprint(const float* traj, long j, int G, int W) {
  Footprint f;
  f.ux = traj[2 * j] * float(G) + 0.5f * float(G);
  f.uy = traj[2 * j + 1] * float(G) + 0.5f * float(G);
  f.valid = isfinite(f.ux) && isfinite(f.uy) && fabsf(f.ux) < 1e6f && fabsf(f.uy) < 1e6f;
  const float half = 0.5f * float(W);
  f.mx0 = f.valid ? int(floorf(f.ux - half)) + 1 : 0;
  f.my0 = f.valid ? int(floorf(f.uy - half)) + 1 : 0;
  return f;
}

// The tile whose chunk list holds chunk b (the gathers' block index): the largest t with chunk_offset[t] <=
// b, chunk_offset being the ascending exclusive scan of the chunks per tile.
__device__ __forceinline__ int tile_of_chunk(const int* __restrict__ chunk_offset, int tiles, int b) {
  int lo = 0, hi = tiles - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (chunk_offset[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

// Rank of this lane's entry in list t, with one atomic per distinct tile in the warp.
__device__ __forceinline__ int aggregated_rank(int* count, int t, bool active) {
  const unsigned act = __ballot_sync(0xffffffffu, active);
  if (!active) return 0;
  const unsigned peers = __match_any_sync(act, t);
  const int lane = int(threadIdx.x & 31);
  const int leader = __ffs(peers) - 1;
  int base = 0;
  if (lane == leader) base = atomicAdd(count + t, __popc(peers));
  base = __shfl_sync(peers, base, leader);
  return base + __popc(peers & ((1u << lane) - 1u));
}

}  // namespace
}  // namespace radstream
