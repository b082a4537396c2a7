// The CUDA NUFFT plan's interpolation (the forward NUFFT's last step) for several coils and widths 4..8, per
// tile of the frame's tile sort, through shared memory. Included by nufft_plan_cuda.cu only.
//
// interp_points reads each point's footprint straight from the grids, a few lanes a point: every load
// instruction touches the cache lines of 8 footprints, and on an H200 F1's interpolation (131072 points x 32
// coils at W 4) took 89 us, bound by the L1's wavefronts (about 23 useful bytes in each 128), 3.5x its
// bandwidth floor. Here a block takes a chunk of a tile's list (the sort set_points made for the spread) and
// the grid region its points can reach (the tile and W - 1 cells past its far edges), for CL coils, into
// shared memory as [cell][coil], read once from the grids in whole rows (by cp.async, while the chunk's
// points are read; a chunk with no point of its own has loaded its region for nothing); then a lane is a
// coil, so that one instruction reads one footprint cell of 32 / CL points for all CL coils, 256 contiguous
// bytes (two wavefronts, no conflicts). Each point is computed by the tile of its footprint's first cell (the
// other tiles whose lists hold it skip it); the chunk's results leave through shared memory, a coil at a time
// in list order (runs of consecutive samples along a spoke). Points with non-finite coordinates are in no
// list: the blocks past the chunks' bound write their zeros.
#pragma once
#include <cuda_pipeline.h>

#include <type_traits>

#include "gpu/dependent_launch.cuh"
#include "noncart/grid_layout.cuh"
#include "noncart/nufft_plan_common.cuh"

namespace radstream {
namespace {

template <int W, int CL>
struct InterpTileShape {
  static constexpr int RW = kT + W - 1;  // the region's edge, in cells
  static constexpr int cells = RW * RW;
  static constexpr int stride = CL + 1;  // float2 per cell: the region's stores hit two banks at most
  static constexpr int out_stride = kChunk + 1;
  static constexpr int region = cells * stride > CL* out_stride ? cells* stride : CL* out_stride;  // float2
  static constexpr std::size_t smem =
      region * sizeof(float2) + kChunk * (2 * sizeof(int) + 2 * W * sizeof(float));
};

template <int W, int CL>
__global__ void __launch_bounds__(kThreads)
    interp_tiles(const float2* __restrict__ grids, bool tiled, const float* __restrict__ traj, long n,
                 int batch, int G, int NT, const float* __restrict__ lut, int res, int edge,
                 const int* __restrict__ chunk_offset, const int4* __restrict__ chunk_info,
                 const int* __restrict__ sorted, unsigned chunk_blocks, float2* __restrict__ samples) {
  using S = InterpTileShape<W, CL>;
  static_assert(32 % CL == 0 && kThreads == 256, "CL lanes a point, 8 warps");
  extern __shared__ float2
      smem[];  // s_g [cells][stride] (later s_out [CL][out_stride]) | s_j | s_o | s_wx | s_wy
  float2* s_g = smem;
  int* s_j = reinterpret_cast<int*>(smem + S::region);
  int* s_o = s_j + kChunk;
  float* s_wx = reinterpret_cast<float*>(s_o + kChunk);
  float* s_wy = s_wx + kChunk * W;
  __shared__ int s_warp[kThreads / 32];
  gpu::wait_for_previous();  // launched dependent: the grids and the tile lists
  gpu::allow_dependents();
  const int c0 = int(blockIdx.y) * CL, cg = min(CL, batch - c0);
  const unsigned blk = blockIdx.x;
  if (blk >= chunk_blocks) {
    const long j = long(blk - chunk_blocks) * kThreads + threadIdx.x;
    if (j < n && !footprint(traj, j, G, W).valid)
      for (int c = 0; c < cg; ++c) samples[size_t(c0 + c) * n + j] = make_float2(0.f, 0.f);
    return;
  }
  const int tiles = NT * NT;
  const int chunks = chunk_offset[tiles];
  const ChunkRef ref = chunk_ref(chunk_info, int(blk));  // (within the table; read with the bound)
  if (int(blk) >= chunks) return;                        // the launch is an upper bound
  const int t = ref.tile;
  const int tx0 = (t % NT) * kT, ty0 = (t / NT) * kT;
  const int first = ref.first, cnt = ref.cnt;
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;

  // 1. The region, [cell][coil], copied asynchronously (cp.async: every cell of every coil in flight at once,
  //    no registers) while step 2 reads the chunk's points: a thread owns the same cells of every coil
  //    (their grid offsets computed once), consecutive threads consecutive cells. (The lanes of coils past
  //    the batch compute from whatever is there; their sums are not stored.)
  {
    constexpr int kCellsPerThread = (S::cells + kThreads - 1) / kThreads;
    const size_t per_grid = size_t(G) * G;
    const unsigned s_base = unsigned(__cvta_generic_to_shared(s_g));
#pragma unroll
    for (int k = 0; k < kCellsPerThread; ++k) {
      const int cell = int(threadIdx.x) + k * kThreads;
      if (cell >= S::cells) continue;
      const int ry = cell / S::RW, rx = cell - ry * S::RW;
      int gy = ty0 + ry, gx = tx0 + rx;
      while (gy >= G) gy -= G;
      while (gx >= G) gx -= G;
      const float2* src =
          grids + size_t(c0) * per_grid + (tiled ? gridlayout::tiled(gy, gx, G) : gy * G + gx);
      const unsigned dst = s_base + unsigned(cell * S::stride) * unsigned(sizeof(float2));
#pragma unroll
      for (int u = 0; u < CL; ++u, src += per_grid)
        if (u < cg) copy_async8(dst + unsigned(u * sizeof(float2)), src);
    }
    __pipeline_commit();
  }
  // 2. The chunk's entries whose footprint starts in this tile, compacted in list order.
  bool mine = false;
  long j = 0;
  Footprint f{0, 0, 0.f, 0.f, false};
  if (int(threadIdx.x) < cnt) {
    j = sorted[first + threadIdx.x];
    f = footprint(traj, j, G, W);
    mine = f.valid && (wrap(f.my0, G) / kT) * NT + wrap(f.mx0, G) / kT == t;
  }
  const unsigned ballot = __ballot_sync(0xffffffffu, mine);
  if (lane == 0) s_warp[warp] = __popc(ballot);
  __syncthreads();
  int base = 0, total = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) {
    const int v = s_warp[w];
    base += w < warp ? v : 0;
    total += v;
  }
  if (total == 0) {  // (the same for every thread of the block)
    __pipeline_wait_prior(0);
    return;
  }
  if (mine) {
    const int e = base + __popc(ballot & ((1u << lane) - 1u));
    s_j[e] = int(j);
    s_o[e] = (wrap(f.my0, G) - ty0) * S::RW + (wrap(f.mx0, G) - tx0);
#pragma unroll
    for (int a = 0; a < W; ++a) {
      s_wx[e * W + a] = lut_lookup(lut, res, edge, float(f.mx0 + a) - f.ux);
      s_wy[e * W + a] = lut_lookup(lut, res, edge, float(f.my0 + a) - f.uy);
    }
  }
  __pipeline_wait_prior(0);
  __syncthreads();
  // 3. A lane per coil, 32 / CL entries a warp at a time; each entry's sum in registers until the region is
  //    no longer read.
  constexpr int EPW = 32 / CL;  // entries per warp pass
  constexpr int kPasses = kChunk / (8 * EPW);
  const int c = lane % CL;
  float2 out[kPasses];
#pragma unroll
  for (int k = 0; k < kPasses; ++k) {
    const int e = k * 8 * EPW + warp * EPW + lane / CL;
    float sx = 0.f, sy = 0.f;
    if (e < total) {
      const float2* g = s_g + s_o[e] * S::stride + c;
      const float* wx = s_wx + e * W;
      const float* wy = s_wy + e * W;
#pragma unroll
      for (int b = 0; b < W; ++b) {
        float rx = 0.f, ry = 0.f;
#pragma unroll
        for (int a = 0; a < W; ++a) {
          const float2 v = g[(b * S::RW + a) * S::stride];
          rx += wx[a] * v.x;
          ry += wx[a] * v.y;
        }
        sx += wy[b] * rx;
        sy += wy[b] * ry;
      }
    }
    out[k] = make_float2(sx, sy);
  }
  __syncthreads();
  float2* s_out = s_g;
#pragma unroll
  for (int k = 0; k < kPasses; ++k) {
    const int e = k * 8 * EPW + warp * EPW + lane / CL;
    if (e < total) s_out[c * S::out_stride + e] = out[k];
  }
  __syncthreads();
  // 4. The samples, a coil at a time in list order.
  for (int i = int(threadIdx.x); i < total * cg; i += kThreads) {
    const int cc = i / total, e = i - cc * total;
    samples[size_t(c0 + cc) * n + s_j[e]] = s_out[cc * S::out_stride + e];
  }
}

// Calls f with interp_tiles<W, 16>, its coil lanes and its shared memory, for W 4..8.
constexpr int kTileInterpLanes = 16;
template <class F>
void with_interp_tiles(int width, F&& f) {
  auto launch = [&](auto w) {
    constexpr int Wc = decltype(w)::value;
    f(interp_tiles<Wc, kTileInterpLanes>, kTileInterpLanes, InterpTileShape<Wc, kTileInterpLanes>::smem);
  };
  switch (width) {
    case 4:
      launch(std::integral_constant<int, 4>{});
      break;
    case 5:
      launch(std::integral_constant<int, 5>{});
      break;
    case 6:
      launch(std::integral_constant<int, 6>{});
      break;
    case 7:
      launch(std::integral_constant<int, 7>{});
      break;
    default:
      launch(std::integral_constant<int, 8>{});
      break;
  }
}

// From this many coils, for widths 4..8, the interpolation goes by tiles through shared memory. Measured on
// an H200 (F1's geometry, W 4, forward): 32 coils 0.154 -> 0.141 ms, at W 6 0.357 -> 0.174; 12 coils 0.066 ->
// 0.067, 8 coils 0.047 -> 0.050, 4 coils 0.033 -> 0.041 (the region's load is not repaid by few coils).
constexpr int kMinTileInterpCoils = 16;
bool tile_interp(int batch, int width) {
  return batch >= kMinTileInterpCoils && width >= 4 && width <= 8;
}

}  // namespace
}  // namespace radstream
