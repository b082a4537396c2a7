// CUDA gridding, binned and tiled. Per frame (the trajectory may change every frame in a sliding window):
//  1. each sample's footprint start cell gives its tile (T x T cells); a counting pass ranks samples in
//  tiles;
//  2. exclusive scans (CUB) give tile offsets and, with chunks of kChunk samples, a list of work items;
//  3. samples are scattered into tile order;
//  4. one block per (tile, chunk) accumulates its samples into a (T+W-1)^2 padded tile in shared memory with
//     shared-memory atomics, a group of coils at a time (the kernel weights are computed once per sample and
//     coil group, shared by the coils of the group), then adds the non-zero cells to the global grid.
// Global atomics go from W^2 per sample and coil (contended at the k-space centre, where every spoke passes)
// to at most one per touched padded-tile cell and coil. All buffers are allocated in configure().
#include <cmath>
#include <cub/device/device_scan.cuh>
#include <string>

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "gridding/gridding.hpp"
#include "gridding/kaiser_bessel.hpp"

namespace radstream {
namespace {

constexpr int kMaxWidth = 16;
constexpr int kTile = 16;    // tile edge in grid cells
constexpr int kChunk = 512;  // samples per block
constexpr int kThreads = 256;
constexpr int kCoilGroup = 8;  // coils accumulated together in shared memory

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
  f.valid = isfinite(f.ux) && isfinite(f.uy);
  const float half = 0.5f * float(W);
  f.mx0 = f.valid ? int(floorf(f.ux - half)) + 1 : 0;
  f.my0 = f.valid ? int(floorf(f.uy - half)) + 1 : 0;
  return f;
}

__global__ void count_tiles(const float* __restrict__ traj, long n, int G, int W, int NT,
                            int* __restrict__ count, int* __restrict__ tile_of, int* __restrict__ rank) {
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const Footprint f = footprint(traj, j, G, W);
  if (!f.valid) {
    tile_of[j] = -1;
    return;
  }
  const int t = (wrap(f.my0, G) / kTile) * NT + wrap(f.mx0, G) / kTile;
  tile_of[j] = t;
  rank[j] = atomicAdd(count + t, 1);
}

__global__ void chunk_counts(const int* __restrict__ count, int tiles, int* __restrict__ chunks) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < tiles) chunks[t] = (count[t] + kChunk - 1) / kChunk;
}

__global__ void scatter(long n, const int* __restrict__ tile_of, const int* __restrict__ rank,
                        const int* __restrict__ offset, int* __restrict__ sorted) {
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int t = tile_of[j];
  if (t >= 0) sorted[offset[t] + rank[j]] = int(j);
}

__global__ void __launch_bounds__(kThreads)
    spread_tiles(const float2* __restrict__ data, const float* __restrict__ traj, long n, int coils, int G,
                 int W, int NT, const float* __restrict__ lut, int res, int edge,
                 const int* __restrict__ count, const int* __restrict__ offset,
                 const int* __restrict__ chunk_offset, const int* __restrict__ sorted,
                 float2* __restrict__ grid) {
  extern __shared__ float2 acc[];  // [kCoilGroup][P * P]
  const int tiles = NT * NT;
  const int b = blockIdx.x;
  if (b >= chunk_offset[tiles]) return;
  // The tile whose chunk list holds b: largest t with chunk_offset[t] <= b.
  int lo = 0, hi = tiles - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (chunk_offset[mid] <= b)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int t = lo;
  const int first = offset[t] + (b - chunk_offset[t]) * kChunk;
  const int last = min(offset[t] + count[t], first + kChunk);
  const int tx0 = (t % NT) * kTile, ty0 = (t / NT) * kTile;
  const int P = kTile + W - 1;
  const int cells = P * P;
  const size_t per_grid = size_t(G) * G;

  for (int c0 = 0; c0 < coils; c0 += kCoilGroup) {
    const int cg = min(kCoilGroup, coils - c0);
    for (int i = threadIdx.x; i < cg * cells; i += blockDim.x) acc[i] = make_float2(0.f, 0.f);
    __syncthreads();
    for (int s = first + int(threadIdx.x); s < last; s += blockDim.x) {
      const long j = sorted[s];
      const Footprint f = footprint(traj, j, G, W);
      // Offsets of the footprint inside the padded tile (the start cell lies in the tile, after wrapping).
      const int ox = wrap(f.mx0, G) - tx0, oy = wrap(f.my0, G) - ty0;
      float wx[kMaxWidth], wy[kMaxWidth];
      for (int a = 0; a < W; ++a) {
        wx[a] = lut_lookup(lut, res, edge, float(f.mx0 + a) - f.ux);
        wy[a] = lut_lookup(lut, res, edge, float(f.my0 + a) - f.uy);
      }
      for (int c = 0; c < cg; ++c) {
        const float2 v = data[size_t(c0 + c) * n + j];
        float2* tile = acc + c * cells;
        for (int a = 0; a < W; ++a) {
          const float vr = v.x * wy[a], vi = v.y * wy[a];
          float* row = reinterpret_cast<float*>(tile + (oy + a) * P + ox);
          for (int q = 0; q < W; ++q) {
            atomicAdd(row + 2 * q, vr * wx[q]);
            atomicAdd(row + 2 * q + 1, vi * wx[q]);
          }
        }
      }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < cg * cells; i += blockDim.x) {
      const float2 v = acc[i];
      if (v.x == 0.f && v.y == 0.f) continue;
      const int c = i / cells, cell = i % cells;
      const int gx = (tx0 + cell % P) % G, gy = (ty0 + cell / P) % G;
      float* dst = reinterpret_cast<float*>(grid + size_t(c0 + c) * per_grid + size_t(gy) * G + gx);
      atomicAdd(dst, v.x);
      atomicAdd(dst + 1, v.y);
    }
    __syncthreads();
  }
}

class GriddingCuda final : public Stage {
 public:
  explicit GriddingCuda(const GriddingParams& p) : p_(p) {
    if (p.width > kMaxWidth)
      throw ConfigError("gridding: kernel_width = " + std::to_string(p.width) + " exceeds the CUDA limit " +
                        std::to_string(kMaxWidth));
  }
  std::string name() const override { return "gridding"; }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    g_ = g;
    in_ext_ = input;
    const KaiserBesselLut lut(p_.width, p_.oversampling, p_.lut_resolution);
    G_ = oversampled_grid_size(g.matrix, p_.oversampling);
    NT_ = (G_ + kTile - 1) / kTile;
    res_ = lut.resolution();
    edge_ = res_ * p_.width / 2;
    lut_ = DeviceBuffer<float>(Extents{lut.table().size()});
    gpu::copy_to_device(lut_.data(), lut.table().data(), lut.table().size() * sizeof(float), ctx.stream);
    const std::size_t n = std::size_t(g.spokes) * g.samples, tiles = std::size_t(NT_) * NT_;
    count_ = DeviceBuffer<int>(Extents{tiles + 1});
    offset_ = DeviceBuffer<int>(Extents{tiles + 1});
    chunks_ = DeviceBuffer<int>(Extents{tiles + 1});
    chunk_offset_ = DeviceBuffer<int>(Extents{tiles + 1});
    tile_of_ = DeviceBuffer<int>(Extents{n});
    rank_ = DeviceBuffer<int>(Extents{n});
    sorted_ = DeviceBuffer<int>(Extents{n});
    std::size_t temp = 0;
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, temp, count_.data(), offset_.data(), int(tiles + 1)));
    scan_temp_ = DeviceBuffer<unsigned char>(Extents{std::max<std::size_t>(temp, 1)});
    const int P = kTile + p_.width - 1;
    smem_ = std::size_t(kCoilGroup) * P * P * sizeof(float2);
    CUDA_CHECK(cudaFuncSetAttribute(spread_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_)));
    gpu::synchronize(ctx.stream);
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(G_), std::size_t(G_)};
    return out_ext_;
  }

  void process(const StageInput& in, View<cfloat> out, Context& ctx) override {
    expect_view("gridding", "input", in.data, in_ext_, Location::Device);
    expect_view("gridding", "output", out, out_ext_, Location::Device);
    const long n = long(g_.spokes) * g_.samples;
    if (in.traj.size() != std::size_t(n) * 2 || in.traj.loc != Location::Device)
      throw InputError("gridding: trajectory is not on the device or has the wrong size");
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    const int tiles = NT_ * NT_;
    CUDA_CHECK(cudaMemsetAsync(out.data, 0, out.size() * sizeof(cfloat), stream));
    CUDA_CHECK(cudaMemsetAsync(count_.data(), 0, count_.size() * sizeof(int), stream));
    const unsigned nb = unsigned((n + 255) / 256);
    count_tiles<<<nb, 256, 0, stream>>>(in.traj.data, n, G_, p_.width, NT_, count_.data(), tile_of_.data(),
                                        rank_.data());
    CUDA_CHECK_LAUNCH("count_tiles");
    std::size_t temp = scan_temp_.size();
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp_.data(), temp, count_.data(), offset_.data(),
                                             tiles + 1, stream));
    chunk_counts<<<(tiles + 1 + 255) / 256, 256, 0, stream>>>(count_.data(), tiles + 1, chunks_.data());
    CUDA_CHECK_LAUNCH("chunk_counts");
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp_.data(), temp, chunks_.data(), chunk_offset_.data(),
                                             tiles + 1, stream));
    scatter<<<nb, 256, 0, stream>>>(n, tile_of_.data(), rank_.data(), offset_.data(), sorted_.data());
    CUDA_CHECK_LAUNCH("scatter");
    // At most n / kChunk + tiles work items; surplus blocks exit at once.
    const unsigned blocks = unsigned(n / kChunk + tiles + 1);
    spread_tiles<<<blocks, kThreads, smem_, stream>>>(
        reinterpret_cast<const float2*>(in.data.data), in.traj.data, n, g_.coils, G_, p_.width, NT_,
        lut_.data(), res_, edge_, count_.data(), offset_.data(), chunk_offset_.data(), sorted_.data(),
        reinterpret_cast<float2*>(out.data));
    CUDA_CHECK_LAUNCH("spread_tiles");
  }

 private:
  GriddingParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  int G_ = 0, NT_ = 0, res_ = 0, edge_ = 0;
  std::size_t smem_ = 0;
  DeviceBuffer<float> lut_;
  DeviceBuffer<int> count_, offset_, chunks_, chunk_offset_, tile_of_, rank_, sorted_;
  DeviceBuffer<unsigned char> scan_temp_;
};

}  // namespace

std::unique_ptr<Stage> make_gridding_cuda(const GriddingParams& p) {
  return std::make_unique<GriddingCuda>(p);
}

}  // namespace radstream
