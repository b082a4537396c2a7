// The CUDA NUFFT plan. Spread (gridding) is binned and output-driven (a gather per tile: no atomics inside a
// tile). Per frame (the trajectory may change every frame in a sliding window):
//  1. each sample is entered in the list of every kT x kT tile its W x W footprint touches (1, 2 or 4);
//     ranks within a tile come from warp-aggregated atomics on a block's shared tallies, then one global
//     atomic per block and tile (neighbouring samples of a spoke share tiles);
//  2. in the same launch, its last block scans the tile counts (CUB BlockScan) into each tile's list offset
//     and chunk offset (chunks of kChunk entries);
//  3. the entries are scattered into tile order;
//  4. one block of kT^2 threads per (tile, chunk, group of CG coils), one thread per grid cell: the chunk's
//     samples are staged in shared memory (footprint origin, the W x-weights and W y-weights from the LUT,
//     computed once per sample; the values of a group of CG coils), and every thread adds the samples whose
//     footprint covers its cell into CG register accumulators. A tile with one chunk stores its cells (so the
//     grid needs no clearing); the few tiles with several chunks (the k-space centre, where every spoke
//     passes) are cleared first and their chunks add with one global atomic per cell and coil.
//     From 2 coils on (kernel widths 4..8) the gather's lanes are coils instead (gather_rows in
//     nufft_gather_rows.cuh: on an H200 R1's gridding 0.128 -> 0.095 ms, R2's 0.061 -> 0.048), with the same
//     tiles and chunks.
// Deterministic mode (set_deterministic; the coil split's operators): the entries ordered by one radix sort
// of (tile, sample) keys instead of the scatter's atomic ranks, so each tile's list is in sample order, the
// per-chunk counting sort stable and without atomics, and the chunks of a shared tile written to a scratch
// buffer and added in chunk order by a second kernel (no atomics): the same bits on every run and every GPU.
// The previous version accumulated with shared-memory atomics per sample; every spoke crossing the centre
// made the centre tile's block serialize on the same few addresses (R1: 1.17 ms gridding).
// All buffers are allocated in the constructor and set_deterministic(). The tile sort is in
// nufft_tile_sort.cuh, the shared helpers in nufft_plan_common.cuh.
#include <algorithm>
#include <cmath>
#include <cub/device/device_radix_sort.cuh>
#include <string>

#include "gpu/cuda_check.cuh"
#include "gpu/dependent_launch.cuh"
#include "gpu/device_memory.hpp"
#include "noncart/grid_layout.cuh"
#include "noncart/nufft_gather_rows.cuh"
#include "noncart/nufft_interp_tiles.cuh"
#include "noncart/nufft_plan_common.cuh"
#include "noncart/nufft_plan_cuda.hpp"
#include "noncart/nufft_tile_sort.cuh"

namespace radstream {
namespace {

// Clears the cells of the tiles that several blocks will add into.
__global__ void clear_shared_tiles(const int* __restrict__ count, int NT, int G, int coils,
                                   float2* __restrict__ grid) {
  gpu::wait_for_previous();
  gpu::allow_dependents();
  const int t = blockIdx.x;
  if (count[t] <= kChunk) return;
  const int x = (t % NT) * kT + int(threadIdx.x) % kT, y = (t / NT) * kT + int(threadIdx.x) / kT;
  if (x >= G || y >= G) return;
  for (int c = 0; c < coils; ++c) grid[(size_t(c) * G + y) * G + x] = make_float2(0.f, 0.f);
}

template <int CG>
__global__ void __launch_bounds__(kThreads)
    gather_tiles(const float2* __restrict__ data, const float* __restrict__ traj, long n, int coils, int G,
                 int W, int NT, const float* __restrict__ lut, int res, int edge,
                 const int* __restrict__ chunk_offset, const int4* __restrict__ chunk_info,
                 const int* __restrict__ sorted, bool det, SampleWeights wts, float2* __restrict__ partial,
                 float2* __restrict__ grid) {
  extern __shared__ float2 smem[];  // s_v [CG][kChunk] | s_o [kChunk] | s_wx, s_wy [kChunk][W]
  __shared__ int s_count[32], s_start[33], s_perm[kChunk];
  __shared__ int s_wcount[kThreads / 32][32];  // deterministic mode: entries per (warp, bucket)
  float2* s_v = smem;
  int2* s_o = reinterpret_cast<int2*>(s_v + kChunk * CG);  // footprint origin relative to the tile
  float* s_wx = reinterpret_cast<float*>(s_o + kChunk);
  float* s_wy = s_wx + kChunk * W;
  const int tiles = NT * NT;
  const int b = blockIdx.x;
  const int chunks = chunk_offset[tiles];
  const ChunkRef ref = chunk_ref(chunk_info, b);  // (within the table; read with the bound, used after it)
  if (b >= chunks) return;                        // the launch is an upper bound
  const int t = ref.tile;
  const bool shared_tile = ref.shared;
  const int tx0 = (t % NT) * kT, ty0 = (t / NT) * kT;
  const int lx = int(threadIdx.x) % kT, ly = int(threadIdx.x) / kT;
  const int gx = tx0 + lx, gy = ty0 + ly;
  const size_t per_grid = size_t(G) * G;

  const int c0 = blockIdx.y * CG;
  const int cg = min(CG, coils - c0);
  float2 acc[CG];
#pragma unroll
  for (int c = 0; c < CG; ++c) acc[c] = make_float2(0.f, 0.f);
  {
    const int first = ref.first, cnt = ref.cnt;
    if (threadIdx.x < 32) s_count[threadIdx.x] = 0;
    if (det) s_wcount[threadIdx.x / 32][threadIdx.x % 32] = 0;  // kThreads = 8 warps x 32 buckets
    __syncthreads();
    int bucket = 0, rank = 0;
    if (int(threadIdx.x) < cnt) {
      const int i = threadIdx.x;
      const long j = sorted[first + i];
      const Footprint f = footprint(traj, j, G, W);
      // Footprint origin relative to the tile origin, wrapped into (-G/2, G/2].
      int sx = wrap(f.mx0 - tx0, G), sy = wrap(f.my0 - ty0, G);
      if (sx > G / 2) sx -= G;
      if (sy > G / 2) sy -= G;
      s_o[i] = make_int2(sx, sy);
      const float wj = sample_weight(wts, traj, j);  // the sample's density weight, folded into the x weights
      for (int a = 0; a < W; ++a) {
        s_wx[i * W + a] = wj * lut_lookup(lut, res, edge, float(f.mx0 + a) - f.ux);
        s_wy[i * W + a] = lut_lookup(lut, res, edge, float(f.my0 + a) - f.uy);
      }
#pragma unroll
      for (int c = 0; c < CG; ++c)
        s_v[c * kChunk + i] = c < cg ? data[size_t(c0 + c) * n + j] : make_float2(0.f, 0.f);
      bucket = min(max(sy + W - 1, 0), 31);  // the footprint's first row, offset: 0 .. kT + W - 2
      if (!det) rank = atomicAdd(&s_count[bucket], 1);
    }
    __syncthreads();
    if (det) {
      // The same counting sort without atomics, stable (each bucket in list order): a lane's rank is the
      // number of its bucket's entries in earlier warps and in its warp before it (__match_any_sync).
      const bool valid = int(threadIdx.x) < cnt;
      const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5;
      const unsigned peers = __match_any_sync(0xffffffffu, valid ? bucket : 64);
      const int before = __popc(peers & ((1u << lane) - 1u));
      if (valid && before == 0) s_wcount[warp][bucket] = __popc(peers);
      __syncthreads();
      if (threadIdx.x < 32) {
        int total = 0;
        for (int w = 0; w < kThreads / 32; ++w) total += s_wcount[w][threadIdx.x];
        s_count[threadIdx.x] = total;
      }
      rank = before;
      for (int w = 0; w < warp; ++w) rank += valid ? s_wcount[w][bucket] : 0;
    }
    // Entries sorted by first row (a counting sort in shared memory), so that each warp, which owns two rows
    // of cells, visits only the entries whose footprint reaches its rows.
    if (threadIdx.x < 32) {
      const int v = s_count[threadIdx.x];
      int incl = v;
#pragma unroll
      for (int d = 1; d < 32; d *= 2) {
        const int u = __shfl_up_sync(0xffffffffu, incl, d);
        if (int(threadIdx.x) >= d) incl += u;
      }
      s_start[threadIdx.x] = incl - v;
      if (threadIdx.x == 31) s_start[32] = incl;
    }
    __syncthreads();
    if (int(threadIdx.x) < cnt) s_perm[s_start[bucket] + rank] = threadIdx.x;
    // This warp's rows are 2w and 2w + 1: entries with first row in [2w - W + 1, 2w + 1], buckets 2w .. 2w +
    // W.
    const int w2 = 2 * int(threadIdx.x / 32);
    const int k_begin = s_start[w2];
    const int k_end = s_start[min(w2 + W + 1, 32)];
    __syncthreads();
#pragma unroll 4
    for (int k = k_begin; k < k_end; ++k) {
      const int s = s_perm[k];
      const int2 o = s_o[s];
      const int ox = lx - o.x, oy = ly - o.y;
      if (unsigned(ox) < unsigned(W) && unsigned(oy) < unsigned(W)) {
        const float w = s_wx[s * W + ox] * s_wy[s * W + oy];
#pragma unroll
        for (int c = 0; c < CG; ++c) {
          const float2 v = s_v[c * kChunk + s];
          acc[c].x += w * v.x;
          acc[c].y += w * v.y;
        }
      }
    }
  }
  if (det && shared_tile) {  // this chunk's share of the tile, added in chunk order by sum_chunk_partials
#pragma unroll
    for (int c = 0; c < CG; ++c)
      if (c < cg) partial[(size_t(b) * coils + c0 + c) * kThreads + threadIdx.x] = acc[c];
    return;
  }
  if (gx < G && gy < G) {
#pragma unroll
    for (int c = 0; c < CG; ++c) {
      if (c >= cg) break;
      float2* dst = grid + size_t(c0 + c) * per_grid + size_t(gy) * G + gx;
      if (shared_tile) {
        atomicAdd(&dst->x, acc[c].x);
        atomicAdd(&dst->y, acc[c].y);
      } else {
        *dst = acc[c];
      }
    }
  }
}

// Deterministic mode: the cells of the tiles with several chunks, each the sum of its chunks' partials in
// chunk order (a block per tile and coil, a thread per cell).
__global__ void __launch_bounds__(kThreads)
    sum_chunk_partials(const int* __restrict__ count, const int* __restrict__ chunk_offset, int NT, int G,
                       int coils, const float2* __restrict__ partial, float2* __restrict__ grid) {
  const int t = blockIdx.x;
  if (count[t] <= kChunk) return;
  const int x = (t % NT) * kT + int(threadIdx.x) % kT, y = (t / NT) * kT + int(threadIdx.x) / kT;
  if (x >= G || y >= G) return;
  const int b0 = chunk_offset[t], b1 = chunk_offset[t + 1], c = blockIdx.y;
  float2 s = make_float2(0.f, 0.f);
  for (int b = b0; b < b1; ++b) {
    const float2 v = partial[(size_t(b) * coils + c) * kThreads + threadIdx.x];
    s.x += v.x;
    s.y += v.y;
  }
  grid[(size_t(c) * G + y) * G + x] = s;
}

// Interpolation (the forward NUFFT's last step, the exact adjoint of the spread) below 16 coils or outside
// widths 4..8 (from 16 coils, widths 4..8: interp_tiles, nufft_interp_tiles.cuh): L lanes per point (L = 4, 8
// or 16, at least W), lane b owning column b of the W x W footprint: it reads its column's W cells for each
// coil, weights them, and the L lanes' sums are added by shuffles; the lane b writes the coils c with c % L
// = b. Why: with a thread per point, a warp's 32 reads of one footprint cell fall on up to 32 grid rows (a
// spoke across the rows), so each load instruction costs up to 32 cache wavefronts; with L lanes a point,
// one instruction reads 32 / L points x L neighbouring cells of one row, a few wavefronts (on an H200 F1's
// interpolation took 111 us with a thread per point, 4.6x its bandwidth floor). A group of kInterpCoils
// coils per blockIdx.y shares the weights computed from the table. The custom forward head writes its grids
// in 8 x 8 cell tiles (grid_layout.cuh; TILED), so that a footprint's rows share cache lines: on an H200 F1's
// forward 0.156 -> 0.152 ms.
constexpr int kInterpCoils = 8;
template <int L, bool TILED>
__global__ void __launch_bounds__(256)
    interp_points(const float2* __restrict__ grids, const float* __restrict__ traj, long n, int batch, int G,
                  int W, const float* __restrict__ lut, int res, int edge, float2* __restrict__ samples) {
  static_assert(L == 4 || L == 8 || L == 16, "lanes per point: a power of two dividing 32");
  const int b = int(threadIdx.x) % L;
  const long j = long(blockIdx.x) * (256 / L) + threadIdx.x / L;
  if (j >= n) return;  // the whole group of L lanes: they share j
  const unsigned group = ((1u << L) - 1u) << ((threadIdx.x & 31u) & ~unsigned(L - 1));
  const int c0 = int(blockIdx.y) * kInterpCoils, c1 = min(batch, c0 + kInterpCoils);
  const Footprint f = footprint(traj, j, G, W);
  if (!f.valid) {
    for (int c = c0 + b; c < c1; c += L) samples[size_t(c) * n + j] = make_float2(0.f, 0.f);
    return;
  }
  const bool column = b < W;
  const float wx = column ? lut_lookup(lut, res, edge, float(f.mx0 + b) - f.ux) : 0.f;
  const int ix = wrap(f.mx0 + (column ? b : 0), G);
  float wy[L];
  int iy[L];
#pragma unroll
  for (int a = 0; a < L; ++a) {
    if (a < W) {
      wy[a] = wx * lut_lookup(lut, res, edge, float(f.my0 + a) - f.uy);
      iy[a] = TILED ? gridlayout::tiled(wrap(f.my0 + a, G), ix, G) : wrap(f.my0 + a, G) * G + ix;
    }
  }
  const size_t per_grid = size_t(G) * G;
  for (int c = c0; c < c1; ++c) {
    const float2* g = grids + size_t(c) * per_grid;
    float sx = 0.f, sy = 0.f;
    if (column) {
#pragma unroll
      for (int a = 0; a < L; ++a) {
        if (a < W) {
          const float2 v = __ldg(g + iy[a]);
          sx += wy[a] * v.x;
          sy += wy[a] * v.y;
        }
      }
    }
#pragma unroll
    for (int o = L / 2; o > 0; o /= 2) {
      sx += __shfl_xor_sync(group, sx, o, L);
      sy += __shfl_xor_sync(group, sy, o, L);
    }
    if ((c - c0) % L == b) samples[size_t(c) * n + j] = make_float2(sx, sy);
  }
}

// Calls f with the gather kernel for a coil group size.
template <class F>
void with_gather(int cg, F&& f) {
  switch (cg) {
    case 1:
      f(gather_tiles<1>);
      break;
    case 4:
      f(gather_tiles<4>);
      break;
    case 8:
      f(gather_tiles<8>);
      break;
    default:
      f(gather_tiles<16>);
      break;
  }
}

int coil_group(int batch) {
  return batch <= 1 ? 1 : batch <= 4 ? 4 : batch <= 8 ? 8 : 16;
}

// From this many coils, for kernel widths 4..8, the spread's lanes are coils (gather_rows); otherwise cells
// (gather_tiles).
constexpr int kMinRowCoils = 2;
bool row_gather(int batch, int width) {
  return batch >= kMinRowCoils && width >= 4 && width <= 8;
}

// Calls f with the row gather for a width (4..8), its coils a group (4 up to 4 coils, 8 up to 8, else 16) and
// its groups a block (2 above 16 coils: one chunk sort for 32 coils), f(kernel, CL, NG).
template <int CL, int NG, class F>
void with_rows_of(int width, F&& f) {
  switch (width) {
    case 4:
      f(gather_rows<CL, 4, NG>, CL, NG);
      break;
    case 5:
      f(gather_rows<CL, 5, NG>, CL, NG);
      break;
    case 6:
      f(gather_rows<CL, 6, NG>, CL, NG);
      break;
    case 7:
      f(gather_rows<CL, 7, NG>, CL, NG);
      break;
    default:
      f(gather_rows<CL, 8, NG>, CL, NG);
      break;
  }
}
template <class F>
void with_rows(int batch, int width, F&& f) {
  if (batch <= 4)
    with_rows_of<4, 1>(width, f);
  else if (batch <= 8)
    with_rows_of<8, 1>(width, f);
  else if (batch <= 16)
    with_rows_of<16, 1>(width, f);
  else
    with_rows_of<16, 2>(width, f);
}

// The gathers' launch bound on chunks for n points (at most 4 n entries, at least one chunk a tile): the
// chunk table and the deterministic partial sums are sized by it for the capacity.
std::size_t max_chunks(std::size_t n, int tiles) {
  return 4 * n / kChunk + std::size_t(tiles) + 1;
}

// The chunk table (an int4 a chunk) of a DeviceBuffer<int>: the header does not know CUDA's vector types.
int4* chunk_table(DeviceBuffer<int>& b) {
  return reinterpret_cast<int4*>(b.data());
}

std::size_t count_smem(int tiles) {
  return std::size_t(tiles) * sizeof(int);
}

std::size_t gather_smem(int cg, int width) {
  return std::size_t(kChunk) * (cg * sizeof(float2) + 3 * sizeof(int) + 2 * width * sizeof(float));
}

}  // namespace

NufftPlanCuda::NufftPlanCuda(int grid, const NufftKernel& kernel, std::size_t capacity, gpu::StreamRef stream)
    : kernel_(kernel),
      lut_(kernel.width, kernel.oversampling, kernel.lut_resolution),
      G_(grid),
      NT_((grid + kT - 1) / kT),
      res_(lut_.resolution()),
      edge_(lut_.resolution() * kernel.width / 2),
      capacity_(capacity),
      stream_(stream) {
  if (kernel.width > kMaxWidth)
    throw ConfigError("nufft plan: kernel_width = " + std::to_string(kernel.width) +
                      " exceeds the CUDA limit " + std::to_string(kMaxWidth));
  if (grid < 2 || grid % 2) throw ConfigError("nufft plan: grid " + std::to_string(grid) + " must be even");
  const std::size_t tiles = std::size_t(NT_) * NT_;
  if (tiles > std::size_t(kMaxTiles))
    throw ConfigError("nufft plan: the CUDA plan handles grids up to " + std::to_string(kMaxTiles * kT * kT) +
                      " cells; this one has " + std::to_string(G_) + "^2");
  d_lut_ = DeviceBuffer<float>(Extents{lut_.table().size()});
  gpu::copy_to_device(d_lut_.data(), lut_.table().data(), lut_.table().size() * sizeof(float), stream);
  count_ = DeviceBuffer<int>(Extents{tiles + 1});
  tally_ = DeviceBuffer<int>(Extents{tiles + 1});  // zero between frames: count_tiles' last block zeroes it
  CUDA_CHECK(
      cudaMemsetAsync(tally_.data(), 0, tally_.size() * sizeof(int), static_cast<cudaStream_t>(stream)));
  // A kernel's dynamic shared-memory limit is one value for the whole process, not per plan: each is set to
  // what the largest plan may ask (a smaller plan made later must not lower it under a larger one's
  // launches).
  CUDA_CHECK(cudaFuncSetAttribute(count_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  int(count_smem(kMaxTiles))));
  offset_ = DeviceBuffer<int>(Extents{tiles + 1});
  chunk_offset_ = DeviceBuffer<int>(Extents{tiles + 1});
  chunk_info_ = DeviceBuffer<int>(Extents{4 * max_chunks(capacity, int(tiles))});  // an int4 a chunk
  CUDA_CHECK(cudaMemsetAsync(chunk_info_.data(), 0, chunk_info_.size() * sizeof(int),
                             static_cast<cudaStream_t>(stream)));  // (the blocks past the chunks read it)
  tile_of_ = DeviceBuffer<int>(Extents{4 * capacity});
  rank_ = DeviceBuffer<int>(Extents{4 * capacity});
  sorted_ = DeviceBuffer<int>(Extents{4 * capacity});
  for (int cg : {1, 4, 8, 16})
    with_gather(cg, [&](auto k) {
      CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      int(gather_smem(cg, kMaxWidth))));
    });
  if (tile_interp(kMinTileInterpCoils, kernel.width))
    with_interp_tiles(kernel.width, [&](auto k, int, std::size_t smem) {
      CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    });
  if (row_gather(kMinRowCoils, kernel.width))
    for (int b : {4, 8, 16, 32})
      with_rows(b, kernel.width, [&](auto k, int lanes, int groups) {
        CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(row_gather_smem(lanes, kernel.width, groups))));
      });
  gpu::synchronize(stream);
}

void NufftPlanCuda::set_points(const float* d_traj, std::size_t n) {
  if (n > capacity_)
    throw InputError("nufft plan: " + std::to_string(n) + " points exceed the planned capacity " +
                     std::to_string(capacity_));
  n_ = n;
  d_traj_ = d_traj;
  auto stream = static_cast<cudaStream_t>(stream_);
  const int tiles = NT_ * NT_;
  // One launch counts, ranks and scans (its last block); at least one block, so that the offsets are
  // written when there are no points.
  const unsigned nb = unsigned(std::max<std::size_t>(1, (n + kCountThreads - 1) / kCountThreads));
  gpu::launch_dependent("count_tiles", count_tiles, nb, kCountThreads, count_smem(tiles), stream, d_traj,
                        long(n), G_, kernel_.width, NT_, tally_.data(), count_.data(), offset_.data(),
                        chunk_offset_.data(), chunk_table(chunk_info_),
                        reinterpret_cast<int4*>(tile_of_.data()), reinterpret_cast<int4*>(rank_.data()));
  if (n &&
      det_) {  // the entries by tile, and by sample within a tile (the scatter's ranks come from atomics)
    const long n4 = long(4 * n);
    const unsigned b4 = unsigned((n4 + 255) / 256);
    entry_keys<<<b4, 256, 0, stream>>>(n4, tile_of_.data(), tiles, sample_bits_, keys_.data());
    CUDA_CHECK_LAUNCH("entry_keys");
    std::size_t bytes = sort_temp_.size();
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(sort_temp_.data(), bytes, keys_.data(), keys_sorted_.data(), n4,
                                              0, sample_bits_ + tile_bits_, stream));
    key_samples<<<b4, 256, 0, stream>>>(n4, keys_sorted_.data(), sample_bits_, sorted_det_.data());
    CUDA_CHECK_LAUNCH("key_samples");
  } else if (n) {
    gpu::launch_dependent("scatter", scatter, unsigned((n + 255) / 256), 256, 0, stream, long(n),
                          reinterpret_cast<const int4*>(tile_of_.data()),
                          reinterpret_cast<const int4*>(rank_.data()),
                          static_cast<const int*>(offset_.data()), sorted_.data());
  }
}

void NufftPlanCuda::set_deterministic(bool on, int max_batch) {
  det_ = on;
  if (!on) return;
  if (max_batch < 1)
    throw ConfigError("nufft plan: deterministic spread for " + std::to_string(max_batch) + " coils");
  const std::size_t tiles = std::size_t(NT_) * NT_;
  if (!sorted_det_.data()) {  // (a default DeviceBuffer's extents multiply to 1, not 0: test the pointer)
    auto bits = [](std::size_t v) {
      int b = 1;
      while ((std::size_t(1) << b) <= v) ++b;
      return b;
    };
    sample_bits_ = bits(capacity_);
    tile_bits_ = bits(tiles);  // the value `tiles` marks unused entries
    std::size_t bytes = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, bytes, keys_.data(), keys_sorted_.data(),
                                              std::int64_t(4 * capacity_), 0, sample_bits_ + tile_bits_,
                                              static_cast<cudaStream_t>(stream_)));
    sort_temp_ = DeviceBuffer<unsigned char>(Extents{std::max<std::size_t>(bytes, 1)});
    keys_ = DeviceBuffer<unsigned long long>(Extents{4 * capacity_});
    keys_sorted_ = DeviceBuffer<unsigned long long>(Extents{4 * capacity_});
    sorted_det_ = DeviceBuffer<int>(Extents{4 * capacity_});
  }
  if (max_batch > det_batch_) {
    const std::size_t chunks = max_chunks(capacity_, tiles);
    partial_ = DeviceBuffer<cfloat>(Extents{chunks * std::size_t(max_batch) * kThreads});
    det_batch_ = max_batch;
  }
}

void NufftPlanCuda::spread(const cfloat* d_samples, cfloat* d_grids, int batch,
                           const SampleWeights& weights) {
  if (weights.ramp_computed() && std::size_t(weights.spokes) * std::size_t(weights.samples) != n_)
    throw InputError("nufft plan: ramp weights of " + std::to_string(weights.spokes) + " x " +
                     std::to_string(weights.samples) + " samples for " + std::to_string(n_) + " points");
  if (!d_traj_) throw InputError("nufft plan: spread before set_points");
  auto stream = static_cast<cudaStream_t>(stream_);
  const int tiles = NT_ * NT_;
  const long n = long(n_);
  auto* grid = reinterpret_cast<float2*>(d_grids);
  if (det_ && batch > det_batch_)
    throw ConfigError("nufft plan: deterministic spread of " + std::to_string(batch) + " coils, set up for " +
                      std::to_string(det_batch_));
  if (!det_) {
    gpu::launch_dependent("clear_shared_tiles", clear_shared_tiles, tiles, kThreads, 0, stream, count_.data(),
                          NT_, G_, batch, grid);
  }
  // At most 4 n / kChunk + tiles chunks (the surplus blocks exit at once), times the coil groups.
  const unsigned chunks = unsigned(max_chunks(n_, tiles));
  if (!det_ && row_gather(batch, kernel_.width)) {
    with_rows(batch, kernel_.width, [&](auto kernel, int lanes, int groups) {
      const dim3 blocks(chunks, unsigned((batch + lanes * groups - 1) / (lanes * groups)));
      gpu::launch_dependent(
          "gather_rows", kernel, blocks, groups * kThreads, row_gather_smem(lanes, kernel_.width, groups),
          stream, reinterpret_cast<const float2*>(d_samples), d_traj_, n, batch, G_, NT_, d_lut_.data(), res_,
          edge_, chunk_offset_.data(), chunk_table(chunk_info_), sorted_.data(), weights, grid);
    });
    return;
  }
  const int cg = coil_group(batch);
  const dim3 blocks(chunks, unsigned((batch + cg - 1) / cg));
  const std::size_t smem = gather_smem(cg, kernel_.width);
  with_gather(cg, [&](auto kernel) {
    kernel<<<blocks, kThreads, smem, stream>>>(reinterpret_cast<const float2*>(d_samples), d_traj_, n, batch,
                                               G_, kernel_.width, NT_, d_lut_.data(), res_, edge_,
                                               chunk_offset_.data(), chunk_table(chunk_info_),
                                               det_ ? sorted_det_.data() : sorted_.data(), det_, weights,
                                               reinterpret_cast<float2*>(partial_.data()), grid);
  });
  CUDA_CHECK_LAUNCH("gather_tiles");
  if (det_) {
    sum_chunk_partials<<<dim3(unsigned(tiles), unsigned(batch)), kThreads, 0, stream>>>(
        count_.data(), chunk_offset_.data(), NT_, G_, batch, reinterpret_cast<const float2*>(partial_.data()),
        grid);
    CUDA_CHECK_LAUNCH("sum_chunk_partials");
  }
}

void NufftPlanCuda::interp(const cfloat* d_grids, cfloat* d_samples, int batch, bool tiled) {
  if (!d_traj_) throw InputError("nufft plan: interp before set_points");
  if (n_ == 0) return;
  auto stream = static_cast<cudaStream_t>(stream_);
  const unsigned groups = unsigned((batch + kInterpCoils - 1) / kInterpCoils);
  auto launch = [&](auto kernel, int lanes) {
    const dim3 nb(unsigned((n_ * lanes + 255) / 256), groups);
    kernel<<<nb, 256, 0, stream>>>(reinterpret_cast<const float2*>(d_grids), d_traj_, long(n_), batch, G_,
                                   kernel_.width, d_lut_.data(), res_, edge_,
                                   reinterpret_cast<float2*>(d_samples));
  };
  if (tiled && (G_ % gridlayout::kTile != 0 || kernel_.width > 8))
    throw InputError("nufft plan: a tiled grid needs G a multiple of 8 and W <= 8; G " + std::to_string(G_) +
                     ", W " + std::to_string(kernel_.width));
  if (tile_interp(batch, kernel_.width)) {
    const int tiles = NT_ * NT_;
    const unsigned chunks = unsigned(max_chunks(n_, tiles));  // as the spread's, then the zeroing blocks
    const unsigned zeroing = unsigned((n_ + kThreads - 1) / kThreads);
    with_interp_tiles(kernel_.width, [&](auto kernel, int lanes, std::size_t smem) {
      const dim3 blocks(chunks + zeroing, unsigned((batch + lanes - 1) / lanes));
      gpu::launch_dependent("interp_tiles", kernel, blocks, kThreads, smem, stream,
                            reinterpret_cast<const float2*>(d_grids), tiled,
                            static_cast<const float*>(d_traj_), long(n_), batch, G_, NT_,
                            static_cast<const float*>(d_lut_.data()), res_, edge_,
                            static_cast<const int*>(chunk_offset_.data()), chunk_table(chunk_info_),
                            static_cast<const int*>(det_ ? sorted_det_.data() : sorted_.data()), chunks,
                            reinterpret_cast<float2*>(d_samples));
    });
    return;
  }
  if (kernel_.width <= 4)
    tiled ? launch(interp_points<4, true>, 4) : launch(interp_points<4, false>, 4);
  else if (kernel_.width <= 8)
    tiled ? launch(interp_points<8, true>, 8) : launch(interp_points<8, false>, 8);
  else
    launch(interp_points<16, false>, 16);
  CUDA_CHECK_LAUNCH("interp_points");
}

}  // namespace radstream
