// The CUDA NUFFT plan's per-frame tile sort: every sample entered in the lists of the tiles its footprint
// touches (count_tiles, warp-aggregated atomic ranks), the lists laid out by one block's scan (plan_tiles),
// and the entries put in tile order, by the atomic ranks (scatter) or, in deterministic mode, by one radix
// sort of (tile, sample) keys (entry_keys, then key_samples after the sort). Included by nufft_plan_cuda.cu
// only.
#pragma once
#include <cub/block/block_scan.cuh>

#include "noncart/nufft_plan_common.cuh"

namespace radstream {
namespace {

// Up to four entries per sample: entry q = (tile, rank) at tile_of[4 j + q], -1 when unused.
__global__ void count_tiles(const float* __restrict__ traj, long n, int G, int W, int NT,
                            int* __restrict__ count, int* __restrict__ tile_of, int* __restrict__ rank) {
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool in = j < n;
  const Footprint f = in ? footprint(traj, j, G, W) : Footprint{0, 0, 0.f, 0.f, false};
  const int tx[2] = {wrap(f.mx0, G) / kT, wrap(f.mx0 + W - 1, G) / kT};
  const int ty[2] = {wrap(f.my0, G) / kT, wrap(f.my0 + W - 1, G) / kT};
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    const int qx = q & 1, qy = q >> 1;
    const bool use = in && f.valid && (qx == 0 || tx[1] != tx[0]) && (qy == 0 || ty[1] != ty[0]);
    const int t = ty[qy] * NT + tx[qx];
    const int r = aggregated_rank(count, use ? t : -1, use);
    if (in) {
      tile_of[4 * j + q] = use ? t : -1;
      rank[4 * j + q] = r;
    }
  }
}

// One block: offset = exclusive scan of count, chunk_offset = exclusive scan of the chunks per tile (at
// least one per tile, so that its block writes its cells, zeros included); entry [tiles] holds the totals.
__global__ void __launch_bounds__(kScanThreads)
    plan_tiles(const int* __restrict__ count, int tiles, int* __restrict__ offset,
               int* __restrict__ chunk_offset) {
  using Scan = cub::BlockScan<int, kScanThreads>;
  __shared__ typename Scan::TempStorage temp;
  int c[kScanItems], k[kScanItems];
  const int base = int(threadIdx.x) * kScanItems;
#pragma unroll
  for (int i = 0; i < kScanItems; ++i) {
    const int t = base + i;
    c[i] = t < tiles ? count[t] : 0;
    k[i] = t < tiles ? max(1, (c[i] + kChunk - 1) / kChunk) : 0;
  }
  int total_c = 0, total_k = 0;
  Scan(temp).ExclusiveSum(c, c, total_c);
  __syncthreads();
  Scan(temp).ExclusiveSum(k, k, total_k);
#pragma unroll
  for (int i = 0; i < kScanItems; ++i) {
    const int t = base + i;
    if (t < tiles) {
      offset[t] = c[i];
      chunk_offset[t] = k[i];
    }
  }
  if (threadIdx.x == 0) {
    offset[tiles] = total_c;
    chunk_offset[tiles] = total_k;
  }
}

__global__ void scatter(long n, const int* __restrict__ tile_of, const int* __restrict__ rank,
                        const int* __restrict__ offset, int* __restrict__ sorted) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= 4 * n) return;
  const int t = tile_of[i];
  if (t >= 0) sorted[offset[t] + rank[i]] = int(i / 4);
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
