// The CUDA NUFFT plan's per-frame tile sort: every sample entered in the lists of the tiles its footprint
// touches and the lists laid out by a scan, in one launch (count_tiles; its last block scans, plan_tiles),
// and the entries put in tile order, by the atomic ranks (scatter) or, in deterministic mode, by one radix
// sort of (tile, sample) keys (entry_keys, then key_samples after the sort). Included by nufft_plan_cuda.cu
// only.
#pragma once
#include <cub/block/block_scan.cuh>

#include "gpu/dependent_launch.cuh"
#include "noncart/nufft_plan_common.cuh"

namespace radstream {
namespace {

constexpr int kCountThreads = 1024;  // a block of the tile count: two spokes of R1's or R2's 512 samples

// The tile lists' sizes, offsets and chunk offsets, from the tallies of count_tiles (one thread per tile, in
// rounds of kCountThreads tiles): count = tally; offset = exclusive scan of count; chunk_offset = exclusive
// scan of the chunks per tile (at least one per tile, so that its block writes its cells, zeros included);
// entry [tiles] holds the totals. Both scans are one, of (count << 32 | chunks): the chunks' total stays
// below 2^32, so no carry crosses. The tallies are read and zeroed in one atomic each, for the next frame.
// Then the round's chunk references (chunk_ref) for the gathers, a chunk a thread (each finds its tile by a
// binary search of the round's first chunks in shared memory): written by each tile's thread, the centre
// tiles' long runs took count_tiles 11.9 -> 16.2 us on R2 (H100).
__device__ __forceinline__ void plan_tiles(int* __restrict__ tally, int tiles, int* __restrict__ count,
                                           int* __restrict__ offset, int* __restrict__ chunk_offset,
                                           int4* __restrict__ chunk_info) {
  using Scan = cub::BlockScan<unsigned long long, kCountThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  __shared__ typename Scan::TempStorage temp;
  __shared__ int s_first[kCountThreads], s_count[kCountThreads],
      s_offset[kCountThreads];  // the round's tiles
  unsigned long long carry = 0;
  for (int t0 = 0; t0 < tiles; t0 += kCountThreads) {
    const int t = t0 + int(threadIdx.x);
    const int c = t < tiles ? atomicExch(tally + t, 0) : 0;
    const int k = t < tiles ? max(1, (c + kChunk - 1) / kChunk) : 0;
    unsigned long long v = (static_cast<unsigned long long>(c) << 32) | static_cast<unsigned>(k), total = 0;
    Scan(temp).ExclusiveSum(v, v, total);
    v += carry;
    const int o = int(v >> 32), b0 = int(v & 0xffffffffu);
    if (t < tiles) {
      count[t] = c;
      offset[t] = o;
      chunk_offset[t] = b0;
    }
    s_first[threadIdx.x] = b0;
    s_count[threadIdx.x] = c;
    s_offset[threadIdx.x] = o;
    __syncthreads();
    const int round_tiles = min(kCountThreads, tiles - t0);
    const int round_first = int(carry & 0xffffffffu);
    const int round_end = round_first + int(total & 0xffffffffu);
    for (int b = round_first + int(threadIdx.x); b < round_end; b += kCountThreads) {
      int lo = 0, hi = round_tiles - 1;  // the last of the round's tiles whose first chunk is <= b
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (s_first[mid] <= b)
          lo = mid;
        else
          hi = mid - 1;
      }
      const int q = b - s_first[lo], n = s_count[lo];
      chunk_info[b] = make_int4(t0 + lo, s_offset[lo] + q * kChunk, min(kChunk, n - q * kChunk), n > kChunk);
    }
    carry += total;
    __syncthreads();  // temp and the round's arrays are reused by the next round
  }
  if (threadIdx.x == 0) {
    offset[tiles] = int(carry >> 32);
    chunk_offset[tiles] = int(carry & 0xffffffffu);
  }
}

// Steps 1 and 2 of the tile sort in one launch. Up to four entries per sample: entry q = (tile, rank) at
// tile_of[4 j + q], -1 when unused. A block first ranks its entries in shared-memory tallies (warp-aggregated
// atomics), then adds each tile's block total to the global tally with one atomic, which gives the block's
// base in that list: the centre tiles, which every spoke crosses, take one global atomic per block instead of
// one per warp and footprint corner (on an H200, R2's count took 18 us that way, serialized on the centre
// tiles' counters). The last block to finish (a ticket at tally[tiles]) scans the tallies (plan_tiles) and
// zeroes them and the ticket, so the frame's sort needs no memset and no separate scan launch. Dynamic shared
// memory: one int per tile.
__global__ void __launch_bounds__(kCountThreads)
    count_tiles(const float* __restrict__ traj, long n, int G, int W, int NT, int* __restrict__ tally,
                int* __restrict__ count, int* __restrict__ offset, int* __restrict__ chunk_offset,
                int4* __restrict__ chunk_info, int4* __restrict__ tile_of, int4* __restrict__ rank) {
  extern __shared__ int s_tally[];
  __shared__ bool s_last;
  const int tiles = NT * NT;
  for (int t = int(threadIdx.x); t < tiles; t += kCountThreads) s_tally[t] = 0;
  gpu::wait_for_previous();  // (launched dependent: the trajectory and the tallies after the kernels before)
  gpu::allow_dependents();
  __syncthreads();
  const long j = long(blockIdx.x) * kCountThreads + threadIdx.x;
  const bool in = j < n;
  const Footprint f = in ? footprint(traj, j, G, W) : Footprint{0, 0, 0.f, 0.f, false};
  const int tx[2] = {wrap(f.mx0, G) / kT, wrap(f.mx0 + W - 1, G) / kT};
  const int ty[2] = {wrap(f.my0, G) / kT, wrap(f.my0 + W - 1, G) / kT};
  int t4[4], r4[4];
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int qx = q & 1, qy = q >> 1;
    const bool use = in && f.valid && (qx == 0 || tx[1] != tx[0]) && (qy == 0 || ty[1] != ty[0]);
    t4[q] = use ? ty[qy] * NT + tx[qx] : -1;
    r4[q] = aggregated_rank(s_tally, t4[q], use);
  }
  __syncthreads();
  for (int t = int(threadIdx.x); t < tiles; t += kCountThreads) {
    const int c = s_tally[t];
    if (c) s_tally[t] = atomicAdd(tally + t, c);
  }
  // The ticket follows the tallies' atomics only: the fence before it then waits for nothing else (fenced
  // after the entries' stores, it waited for them in every block). The entries are stored after it; the
  // last block's scan does not read them (the scatter, the next launch, does).
  __threadfence();  // this block's tallies before its ticket
  __syncthreads();
  if (threadIdx.x == 0) s_last = atomicAdd(tally + tiles, 1) == int(gridDim.x) - 1;
  __syncthreads();
  if (in) {
#pragma unroll
    for (int q = 0; q < 4; ++q) r4[q] = t4[q] >= 0 ? s_tally[t4[q]] + r4[q] : 0;
    tile_of[j] = make_int4(t4[0], t4[1], t4[2], t4[3]);
    rank[j] = make_int4(r4[0], r4[1], r4[2], r4[3]);
  }
  if (!s_last) return;
  __threadfence();
  plan_tiles(tally, tiles, count, offset, chunk_offset, chunk_info);
  if (threadIdx.x == 0) tally[tiles] = 0;
}

// A sample a thread: its four entries' tiles and ranks in two 16-byte loads.
__global__ void scatter(long n, const int4* __restrict__ tile_of, const int4* __restrict__ rank,
                        const int* __restrict__ offset, int* __restrict__ sorted) {
  gpu::wait_for_previous();  // count_tiles' entries and offsets
  gpu::allow_dependents();
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int4 t = tile_of[j], r = rank[j];
  if (t.x >= 0) sorted[offset[t.x] + r.x] = int(j);
  if (t.y >= 0) sorted[offset[t.y] + r.y] = int(j);
  if (t.z >= 0) sorted[offset[t.z] + r.z] = int(j);
  if (t.w >= 0) sorted[offset[t.w] + r.w] = int(j);
}

// Deterministic mode: entry i's key is (tile << sample_bits) | sample, unused entries (tile = tiles) last, so
// that one radix sort orders the entries by tile and, within a tile, by sample.
__global__ void entry_keys(long n4, const int* __restrict__ tile_of, int tiles, int sample_bits,
                           unsigned long long* __restrict__ keys) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  const int t = tile_of[i];
  keys[i] = (static_cast<unsigned long long>(t >= 0 ? t : tiles) << sample_bits) |
            static_cast<unsigned long long>(i / 4);
}

__global__ void key_samples(long n4, const unsigned long long* __restrict__ keys, int sample_bits,
                            int* __restrict__ sorted) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n4) sorted[i] = int(keys[i] & ((1ULL << sample_bits) - 1ULL));
}

}  // namespace
}  // namespace radstream
