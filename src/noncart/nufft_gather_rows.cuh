// The CUDA NUFFT plan's spread for 2 or more coils and widths 4..8: a gather per (tile, chunk) in which the
// lanes of a warp are coils, not cells. Included by nufft_plan_cuda.cu only.
//
// The cell-per-thread gather (gather_tiles) has every lane of a warp test every entry that reaches its two
// rows, and a W x W footprint covers about a fifth of a warp's 32 cells: four lanes in five idle through
// every multiply-add of every coil. Here a lane is a coil (CL = 16, 8 or 4 coils a block, 32 / CL rows a
// warp) and a warp owns a band of rows of the tile, accumulated in registers. The chunk's entries are sorted
// in shared memory by the footprint's first column, then first row, relative to the tile ((kT + W - 1)^2
// buckets, a counting sort): for each first column (a loop unrolled at compile time, so that the cells an
// entry adds to are registers, not indexed memory) the entries whose first row reaches the band are one
// contiguous run. Values are staged once per chunk for all NG x CL coils, [coil][entry] at a padded stride
// (the lanes read one entry's coils without bank conflicts), already in bucket order. The tile's cells leave
// through shared memory (a lane's cells lie in CL grids; written directly, a shared tile's atomics touched 32
// sectors an instruction and the kernel was 23 % slower than gather_tiles on R1).
#pragma once
#include <cuda_pipeline.h>

#include <cub/block/block_scan.cuh>

#include "gpu/dependent_launch.cuh"
#include "noncart/nufft_plan_common.cuh"

namespace radstream {
namespace {

constexpr int kStageStride = kChunk + 1;  // s_v's stride per coil, in float2
constexpr int kBucketSlots = 1024;        // (kT + W - 1)^2 <= 23^2 buckets for W <= 8

// Shared memory of gather_rows<CL, W, NG>: NG groups of CL coils staged, and the entries' weights and rows.
std::size_t row_gather_smem(int coil_lanes, int width, int groups = 1) {
  return std::size_t(groups) * coil_lanes * kStageStride * sizeof(float2) +
         std::size_t(kChunk) * (2 * width * sizeof(float) + sizeof(int));
}

// One block of NG x kThreads per (tile, chunk of kChunk entries, NG groups of CL coils). The tile lists,
// chunks and the shared-tile convention (a tile with several chunks cleared first and added into with
// atomics) are those of gather_tiles. Lane = (row of the warp's band, coil); a warp's band is R = 32 / CL
// rows of XW cells; each group of 8 warps covers the tile for its CL coils. With NG = 2 (32 coils a block)
// the chunk's sort, weights and rows (steps 1-3) are made once for both groups instead of once per group's
// block: on R1 they were about a third of the spread's stall samples.
template <int CL, int W, int NG>
__global__ void __launch_bounds__(NG* kThreads, NG == 1 ? 4 : 2)
    gather_rows(const float2* __restrict__ data, const float* __restrict__ traj, long n, int coils, int G,
                int NT, const float* __restrict__ lut, int res, int edge,
                const int* __restrict__ chunk_offset, const int4* __restrict__ chunk_info,
                const int* __restrict__ sorted, SampleWeights wts, float2* __restrict__ grid) {
  constexpr int R = 32 / CL;                        // rows of a band
  constexpr int XW = R >= 8 ? 4 : R >= 4 ? 8 : kT;  // cells of a band's row
  constexpr int kTasks = (kT / R) * (kT / XW);
  static_assert(kTasks == kThreads / 32, "one band a warp");
  constexpr int S = kT + W - 1;  // buckets per edge: first column / row from 1 - W to kT - 1
  constexpr int kBlock = NG * kThreads;
  constexpr int kPerThread = kBucketSlots / kBlock;  // bucket counts a thread scans
  static_assert(S * S <= kBucketSlots && kPerThread * kBlock == kBucketSlots, "the scan's counts");
  using Scan = cub::BlockScan<int, kBlock>;
  extern __shared__ float2 smem[];  // s_v [NG CL][kStageStride] | s_wx, s_wy [kChunk][W] | s_oy [kChunk]
  __shared__ int s_start[kBucketSlots + 1];
  __shared__ typename Scan::TempStorage scan_temp;
  float2* s_v = smem;
  float* s_wx = reinterpret_cast<float*>(s_v + NG * CL * kStageStride);
  float* s_wy = s_wx + kChunk * W;
  int* s_oy = reinterpret_cast<int*>(s_wy + kChunk * W);
  for (int q = threadIdx.x; q < kBucketSlots; q += kBlock) s_start[q] = 0;  // (before the wait: shared only)
  gpu::wait_for_previous();  // launched dependent: the tile lists, the weights and the cleared tiles
  gpu::allow_dependents();
  const int tiles = NT * NT;
  const int blk = blockIdx.x;
  const int chunks = chunk_offset[tiles];
  const ChunkRef ref = chunk_ref(chunk_info, blk);  // (within the table; read with the bound, used after it)
  if (blk >= chunks) return;                        // the launch is an upper bound
  const int t = ref.tile;
  const bool shared_tile = ref.shared;
  const int tx0 = (t % NT) * kT, ty0 = (t / NT) * kT;
  const int b0 = int(blockIdx.y) * NG * CL;  // the block's first coil
  const int bg = min(NG * CL, coils - b0);   // and its coils

  // 1. Each entry's bucket (first column major, then first row) and its rank within it.
  __syncthreads();
  const int first = ref.first, cnt = ref.cnt;
  int bucket = -1, rank = 0, sy = 0;
  long j = 0;
  Footprint f{0, 0, 0.f, 0.f, false};
  if (int(threadIdx.x) < cnt) {
    j = sorted[first + threadIdx.x];
    f = footprint(traj, j, G, W);
    int sx = wrap(f.mx0 - tx0, G);  // the footprint's origin relative to the tile, in (-G/2, G/2]
    sy = wrap(f.my0 - ty0, G);
    if (sx > G / 2) sx -= G;
    if (sy > G / 2) sy -= G;
    if (f.valid && sx > -W && sx < kT && sy > -W && sy < kT) {
      bucket = (sx + W - 1) * S + (sy + W - 1);
      rank = atomicAdd(&s_start[bucket], 1);
    }
  }
  __syncthreads();
  // 2. Bucket starts: an exclusive scan of the counts.
  {
    int v[kPerThread];
#pragma unroll
    for (int q = 0; q < kPerThread; ++q) v[q] = s_start[kPerThread * threadIdx.x + q];
    __syncthreads();
    int total = 0;
    Scan(scan_temp).ExclusiveSum(v, v, total);
#pragma unroll
    for (int q = 0; q < kPerThread; ++q) s_start[kPerThread * threadIdx.x + q] = v[q];
    if (threadIdx.x == 0) s_start[kBucketSlots] = total;
  }
  __syncthreads();
  // 3. Each entry's weights (the density weight folded into the x weights), first row and values, staged at
  //    its sorted place.
  //    The NG x CL values are copied asynchronously (cp.async, no registers), all in flight with the weights'
  //    loads: one global latency for the stage instead of one per few coils (the stage's loads were the
  //    kernel's main stall on R1).
  if (bucket >= 0) {
    const int p = s_start[bucket] + rank;
    const unsigned dst = unsigned(__cvta_generic_to_shared(s_v + p));
    const float2* src = data + size_t(b0) * n + j;
#pragma unroll
    for (int c = 0; c < NG * CL; ++c) {  // coils past the batch: zeros (none of the 8 bytes read)
      copy_async8(dst + unsigned(c * kStageStride * sizeof(float2)), src, c < bg ? 8 : 0);
      if (c + 1 < bg) src += n;
    }
    __pipeline_commit();
    const float wj = sample_weight(wts, traj, j);  // the sample's density weight, if the spread applies one
#pragma unroll
    for (int a = 0; a < W; ++a) {
      s_wx[p * W + a] = wj * lut_lookup(lut, res, edge, float(f.mx0 + a) - f.ux);
      s_wy[p * W + a] = lut_lookup(lut, res, edge, float(f.my0 + a) - f.uy);
    }
    s_oy[p] = sy;
    __pipeline_wait_prior(0);
  }
  __syncthreads();
  // 4. This warp's band: for each first column that reaches it (unrolled, so that the cells an entry adds to
  //    are known at compile time and stay in registers), the contiguous run of buckets whose first row
  //    reaches the band.
  const int lane = int(threadIdx.x) & 31;
  const int warp = NG == 1 ? int(threadIdx.x) >> 5 : (int(threadIdx.x) >> 5) % kTasks;  // in its group
  const int group = NG == 1 ? 0 : int(threadIdx.x) / kThreads;
  const int c = group * CL + lane % CL;  // this lane's coil in the block
  const int x0 = (warp % (kT / XW)) * XW, y0 = (warp / (kT / XW)) * R;
  const int y = y0 + lane / CL;
  const float2* v_lane = s_v + c * kStageStride;
  float2 acc[XW];
#pragma unroll
  for (int k = 0; k < XW; ++k) acc[k] = make_float2(0.f, 0.f);
#pragma unroll
  for (int cc = 0; cc < XW + W - 1; ++cc) {  // first column x0 + cc - (W - 1)
    const int q = (x0 + cc) * S + y0;        // first rows y0 - W + 1 .. y0 + R - 1
    const int k_begin = s_start[q], k_end = s_start[q + W + R - 1];
#pragma unroll 2
    for (int s = k_begin; s < k_end; ++s) {
      const int b = y - s_oy[s];  // this lane's row of the footprint
      const float wy = unsigned(b) < unsigned(W) ? s_wy[s * W + b] : 0.f;
      const float2 v = v_lane[s];
      const float vx = wy * v.x, vy = wy * v.y;
#pragma unroll
      for (int a = 0; a < W; ++a) {
        const int k = cc - (W - 1) + a;
        if (k >= 0 && k < XW) {
          const float w = s_wx[s * W + a];
          acc[k].x += w * vx;
          acc[k].y += w * vy;
        }
      }
    }
  }
  // 5. The tile's cells through shared memory (s_v's space, [coil][cell] at the same padded stride), so that
  //    the grid is written (or, in a shared tile, added to) a row of cells per warp and coil: the lanes' own
  //    cells lie in CL different grids.
  __syncthreads();
  float2* s_out = s_v;
#pragma unroll
  for (int k = 0; k < XW; ++k) s_out[c * kStageStride + y * kT + x0 + k] = acc[k];
  __syncthreads();
  const int cell = NG == 1 ? int(threadIdx.x) : int(threadIdx.x) % kThreads;
  const int gx = tx0 + cell % kT, gy = ty0 + cell / kT;
  if (gx >= G || gy >= G) return;
  // Group g's threads write its coils.
  const int g0 = group * CL, gc = min(CL, bg - g0);
  float2* dst = grid + size_t(b0 + g0) * size_t(G) * G + size_t(gy) * G + gx;
  for (int cc = 0; cc < gc; ++cc, dst += size_t(G) * G) {
    const float2 v = s_out[(g0 + cc) * kStageStride + cell];
    if (shared_tile) {
#if __CUDA_ARCH__ >= 900
      atomicAdd(dst, v);  // one vector reduction for both parts
#else
      atomicAdd(&dst->x, v.x);
      atomicAdd(&dst->y, v.y);
#endif
    } else {
      *dst = v;
    }
  }
}

}  // namespace
}  // namespace radstream
