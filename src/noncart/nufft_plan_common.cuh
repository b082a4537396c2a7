// The CUDA NUFFT plan's constants and device helpers (tiles, the LUT lookup, a sample's footprint), shared by
// its tile sort (nufft_tile_sort.cuh) and its gather and interpolation kernels, and by the 3D plan. Included
// by nufft_plan_cuda.cu and nufft_plan_cuda3d.cu; everything here is internal to each translation unit.
#pragma once
#include <cuda_runtime.h>
#include <cmath>

#include "noncart/ramp_weight.hpp"

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

// Sample j's weight in a spread (SampleWeights): the array's, the radial ramp's (computed here from the
// trajectory, the bits of the weights kernel), or 1.
__device__ __forceinline__ float sample_weight(const SampleWeights& w, const float* __restrict__ traj,
                                               long j) {
  if (w.array) return __ldg(w.array + j);
  if (!is_ramp(w.ramp)) return 1.f;
  const int p = int(j / w.samples), s = int(j % w.samples);
  return ramp_weight(w.ramp == DcfMethod::RampDc, traj + size_t(p) * w.samples * 2, w.samples, s, w.spokes);
}

// An asynchronous copy of 8 bytes, global to shared (cp.async; wait with __pipeline_wait_prior): src_bytes
// of them read (0 or 8), the rest zero-filled. The shared address is a 32-bit one (__cvta_generic_to_shared
// of the buffer, once); through __pipeline_memcpy_async each copy recomputed its generic-to-shared window and
// its 64-bit global address, about 15 instructions a copy (a quarter of interp_tiles' instructions on F1).
__device__ __forceinline__ void copy_async8(unsigned s_addr, const void* src, int src_bytes = 8) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(s_addr),
               "l"(__cvta_generic_to_global(src)), "r"(src_bytes)
               : "memory");
}

// A gather block's chunk, one int4 per chunk written by the tile sort's scan (plan_tiles): x its tile, y its
// first entry in the sorted lists, z its entries (0..kChunk), w 1 when its tile has several chunks (a shared
// tile, cleared first and added into). One 16-byte load per block; a binary search over the chunk offsets
// (ten dependent loads, then the tile's count and offset) took 15-19 % of the stall samples of gather_rows
// and interp_tiles on an H100.
struct ChunkRef {
  int tile, first, cnt;
  bool shared;
};
__device__ __forceinline__ ChunkRef chunk_ref(const int4* __restrict__ chunk_info, int b) {
  const int4 c = chunk_info[b];
  return ChunkRef{c.x, c.y, c.z, c.w != 0};
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
