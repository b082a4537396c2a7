// The 3D CUDA NUFFT plan (nufft_plan_cuda3d.hpp). Per frame:
//  1. each valid point gets the bin (kB^3 cells) of its grid cell, and its rank there from warp-aggregated
//     atomics; one device-wide scan of the bin counts gives each bin's list offset, and the points are
//     scattered into bin order;
//  2. each bin is split into subproblems of at most kSub points (a scan of the per-bin subproblem counts, and
//     one thread per bin writing its subproblems' bin ids).
// Spread: one block per (subproblem, coil). The block clears a shared-memory copy of its bin padded by the
// kernel's reach (kB + W cells per axis), adds each point's W^3 footprint there with shared-memory atomics
// (a warp per point: its 3 W weights from the table in shared memory, the taps shared by the lanes), then
// adds the padded copy to the grid (wrapped) with one global atomic per non-zero cell. The grid is cleared
// first. A 2D-style gather per tile (NufftPlanCuda) would need a cell to visit every point of a bin whose
// halo covers it; at the densities of 3D trajectories (a few points per bin away from the centre) the scatter
// into shared memory does less work. Interp: one thread per point in bin order (neighbouring threads read
// neighbouring cells), the W^3 gather per coil; the samples are cleared first so that invalid points read 0.
#include <algorithm>
#include <cub/device/device_scan.cuh>
#include <string>
#include <type_traits>

#include "gpu/cuda_check.cuh"
#include "noncart/nufft_plan_common.cuh"
#include "noncart/nufft_plan_cuda3d.hpp"

namespace radstream {
namespace {

constexpr int kB = 8;            // bin edge in grid cells
constexpr int kSub = 256;        // points per subproblem
constexpr int kInterpCoils = 4;  // coils per interp thread (blockIdx.y: the coil groups)

struct Grid3 {
  int x, y, z;
};

// A point's grid coordinates, the first cell of its footprint (unwrapped, as the CPU plan computes it) and
// the bin of its own cell.
struct Point3 {
  float u[3];
  int m0[3];
  int cell[3];  // wrapped cell of floor(u)
  bool valid;
};

__device__ __forceinline__ Point3 point3(const float* __restrict__ traj, long j, Grid3 g, int W) {
  Point3 p;
  const int G[3] = {g.x, g.y, g.z};
  const float half = 0.5f * float(W);
  p.valid = true;
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    p.u[a] = traj[3 * j + a] * float(G[a]) + 0.5f * float(G[a]);
    p.valid = p.valid && isfinite(p.u[a]) && fabsf(p.u[a]) < 1e6f;
  }
#pragma unroll
  for (int a = 0; a < 3; ++a) {
    p.m0[a] = p.valid ? int(floorf(p.u[a] - half)) + 1 : 0;
    p.cell[a] = p.valid ? wrap(int(floorf(p.u[a])), G[a]) : 0;
  }
  return p;
}

__global__ void bin_points(const float* __restrict__ traj, long n, Grid3 g, int W, Grid3 nb,
                           int* __restrict__ count, int* __restrict__ bin_of, int* __restrict__ rank) {
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool in = j < n;
  const Point3 p = in ? point3(traj, j, g, W) : Point3{};
  const bool use = in && p.valid;
  const int b = use ? (p.cell[2] / kB * nb.y + p.cell[1] / kB) * nb.x + p.cell[0] / kB : -1;
  const int r = aggregated_rank(count, b, use);  // every lane of the warp takes part
  if (in) {
    bin_of[j] = b;
    rank[j] = r;
  }
}

__global__ void scatter_points(long n, const int* __restrict__ bin_of, const int* __restrict__ rank,
                               const int* __restrict__ offset, int* __restrict__ sorted) {
  const long j = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int b = bin_of[j];
  if (b >= 0) sorted[offset[b] + rank[j]] = int(j);
}

__global__ void count_subproblems(const int* __restrict__ count, int bins, int* __restrict__ sub_count) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < bins) sub_count[b] = (count[b] + kSub - 1) / kSub;
  if (b == bins) sub_count[b] = 0;  // so that the exclusive scan's last entry is the total
}

__global__ void fill_subproblems(const int* __restrict__ sub_count, const int* __restrict__ sub_offset,
                                 int bins, int* __restrict__ sub_bin) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= bins) return;
  for (int s = 0; s < sub_count[b]; ++s) sub_bin[sub_offset[b] + s] = b;
}

template <int WMAX>
__global__ void __launch_bounds__(kSub)
    spread_subproblems(const float2* __restrict__ data, const float* __restrict__ traj, long n, Grid3 g,
                       int W, Grid3 nb, const float* __restrict__ lut, int res, int edge,
                       const int* __restrict__ offset, const int* __restrict__ sub_offset,
                       const int* __restrict__ sub_bin, const int* __restrict__ sorted, int bins,
                       float2* __restrict__ grid) {
  extern __shared__ float2 tile[];           // [P][P][P], P = kB + W, origin at the bin's first cell - W/2
  __shared__ float s_w[kSub / 32][3][WMAX];  // each warp's current point: its weights per axis
  const int s = blockIdx.x;
  if (s >= sub_offset[bins]) return;  // the launch is an upper bound
  const int b = sub_bin[s], c = blockIdx.y;
  const int P = kB + W, cells = P * P * P;
  const int bx = b % nb.x, by = (b / nb.x) % nb.y, bz = b / (nb.x * nb.y);
  const int o[3] = {bx * kB - W / 2, by * kB - W / 2, bz * kB - W / 2};
  for (int i = threadIdx.x; i < cells; i += blockDim.x) tile[i] = make_float2(0.f, 0.f);
  __syncthreads();
  const int first = offset[b] + (s - sub_offset[b]) * kSub;
  const int last = min(offset[b + 1], first + kSub);
  // A warp per point: its lanes share the point's W^3 taps (consecutive lanes on consecutive x cells), so a
  // bin of a few points keeps every warp busy and each lane's chain of shared-memory atomics short.
  const int warp = int(threadIdx.x) >> 5, lane = int(threadIdx.x) & 31;
  float(*w)[WMAX] = s_w[warp];
  const int taps = W * W * W;
  for (int i = first + warp; i < last; i += kSub / 32) {
    const long j = sorted[i];
    const Point3 p = point3(traj, j, g, W);
    int l[3];
#pragma unroll
    for (int a = 0; a < 3; ++a) {
      // The footprint's first cell moved by the same multiple of G as the point's own cell, relative to the
      // padded tile: 0 .. kB for any width.
      l[a] = p.m0[a] + (p.cell[a] - int(floorf(p.u[a]))) - o[a];
      if (lane < W) w[a][lane] = lut_lookup(lut, res, edge, float(p.m0[a] + lane) - p.u[a]);
    }
    const float2 v = data[size_t(c) * n + j];
    __syncwarp();
    for (int q = lane; q < taps; q += 32) {
      const int k = q % W, a = (q / W) % W, e = q / (W * W);
      const float wt = w[2][e] * w[1][a] * w[0][k];
      float2* cell = tile + ((l[2] + e) * P + l[1] + a) * P + l[0] + k;
      atomicAdd(&cell->x, v.x * wt);
      atomicAdd(&cell->y, v.y * wt);
    }
    __syncwarp();  // the weights are rewritten for the warp's next point
  }
  __syncthreads();
  const size_t per_grid = size_t(g.x) * g.y * g.z;
  float2* dst = grid + size_t(c) * per_grid;
  for (int q = threadIdx.x; q < cells; q += blockDim.x) {
    const float2 v = tile[q];
    if (v.x == 0.f && v.y == 0.f) continue;
    const int x = wrap(o[0] + q % P, g.x), y = wrap(o[1] + (q / P) % P, g.y),
              z = wrap(o[2] + q / (P * P), g.z);
    float2* cell = dst + (size_t(z) * g.y + y) * g.x + x;
    atomicAdd(&cell->x, v.x);
    atomicAdd(&cell->y, v.y);
  }
}

template <int WMAX>
__global__ void __launch_bounds__(256)
    interp_points3(const float2* __restrict__ grids, const float* __restrict__ traj, long n, int batch,
                   Grid3 g, int W, const float* __restrict__ lut, int res, int edge,
                   const int* __restrict__ sorted, const int* __restrict__ total,
                   float2* __restrict__ samples) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= *total) return;
  const int c0 = int(blockIdx.y) * kInterpCoils, c1 = min(batch, c0 + kInterpCoils);
  const long j = sorted[i];
  const Point3 p = point3(traj, j, g, W);
  float w[3][WMAX];
  int ix[WMAX], iy[WMAX];
  size_t iz[WMAX];
#pragma unroll
  for (int k = 0; k < WMAX; ++k) {
    w[0][k] = k < W ? lut_lookup(lut, res, edge, float(p.m0[0] + k) - p.u[0]) : 0.f;
    w[1][k] = k < W ? lut_lookup(lut, res, edge, float(p.m0[1] + k) - p.u[1]) : 0.f;
    w[2][k] = k < W ? lut_lookup(lut, res, edge, float(p.m0[2] + k) - p.u[2]) : 0.f;
    ix[k] = wrap(p.m0[0] + k, g.x);
    iy[k] = wrap(p.m0[1] + k, g.y) * g.x;
    iz[k] = size_t(wrap(p.m0[2] + k, g.z)) * g.y * g.x;
  }
  const size_t per_grid = size_t(g.x) * g.y * g.z;
  for (int c = c0; c < c1; ++c) {
    const float2* gc = grids + size_t(c) * per_grid;
    float sr = 0.f, si = 0.f;
#pragma unroll 1
    for (int e = 0; e < W; ++e) {
#pragma unroll 1
      for (int a = 0; a < W; ++a) {
        const float2* row = gc + iz[e] + iy[a];
        float rr = 0.f, ri = 0.f;
#pragma unroll
        for (int k = 0; k < WMAX; ++k)
          if (k < W) {
            const float2 v = __ldg(row + ix[k]);
            rr += w[0][k] * v.x;
            ri += w[0][k] * v.y;
          }
        const float wza = w[2][e] * w[1][a];
        sr += rr * wza;
        si += ri * wza;
      }
    }
    samples[size_t(c) * n + j] = make_float2(sr, si);
  }
}

template <class F>
void with_width(int W, F&& f) {
  if (W <= 4)
    f(std::integral_constant<int, 4>{});
  else if (W <= 8)
    f(std::integral_constant<int, 8>{});
  else
    f(std::integral_constant<int, kMaxWidth>{});
}

}  // namespace

NufftPlanCuda3d::NufftPlanCuda3d(std::array<int, 3> grid, const NufftKernel& kernel, std::size_t capacity,
                                 gpu::StreamRef stream)
    : kernel_(kernel),
      lut_(kernel.width, kernel.oversampling, kernel.lut_resolution),
      grid_(grid),
      res_(lut_.resolution()),
      edge_(lut_.resolution() * kernel.width / 2),
      capacity_(capacity),
      stream_(stream) {
  if (kernel.width > kMaxWidth || kernel.width < 2)
    throw ConfigError("nufft plan 3d: kernel_width = " + std::to_string(kernel.width) + " must be in 2.." +
                      std::to_string(kMaxWidth));
  for (int a = 0; a < 3; ++a)
    if (grid[a] < 2 || grid[a] % 2)
      throw ConfigError("nufft plan 3d: grid extent " + std::to_string(grid[a]) + " on axis " +
                        std::to_string(a) + " must be even and >= 2");
  if (capacity > std::size_t(1) << 30)
    throw ConfigError("nufft plan 3d: capacity " + std::to_string(capacity) + " exceeds 2^30 points");
  std::size_t bins = 1;
  for (int a = 0; a < 3; ++a) {
    bins_[a] = (grid[a] + kB - 1) / kB;
    bins *= std::size_t(bins_[a]);
  }
  if (bins >= std::size_t(1) << 30)
    throw ConfigError("nufft plan 3d: the grid has too many cells (" + std::to_string(grid_size()) + ")");
  const int P = kB + kernel.width;
  tile_bytes_ = std::size_t(P) * P * P * sizeof(cfloat);
  int max_smem = 0, dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  if (tile_bytes_ > std::size_t(max_smem))
    throw ConfigError("nufft plan 3d: kernel_width = " + std::to_string(kernel.width) + " needs " +
                      std::to_string(tile_bytes_) + " bytes of shared memory per block; this GPU has " +
                      std::to_string(max_smem));
  // The limit is the kernel's for the whole process, not this plan's: set to what the widest width of this
  // instantiation asks (as far as the GPU allows), so that a narrower plan made later cannot lower it under
  // a wider one's launches.
  with_width(kernel.width, [&](auto wmax) {
    constexpr int Q = kB + decltype(wmax)::value;
    const std::size_t widest = std::size_t(Q) * Q * Q * sizeof(cfloat);
    CUDA_CHECK(cudaFuncSetAttribute(spread_subproblems<decltype(wmax)::value>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    int(std::min(widest, std::size_t(max_smem)))));
  });
  d_lut_ = DeviceBuffer<float>(Extents{lut_.table().size()});
  gpu::copy_to_device(d_lut_.data(), lut_.table().data(), lut_.table().size() * sizeof(float), stream);
  const std::size_t cap = std::max<std::size_t>(capacity, 1);
  bin_of_ = DeviceBuffer<int>(Extents{cap});
  rank_ = DeviceBuffer<int>(Extents{cap});
  sorted_ = DeviceBuffer<int>(Extents{cap});
  count_ = DeviceBuffer<int>(Extents{bins + 1});
  offset_ = DeviceBuffer<int>(Extents{bins + 1});
  sub_count_ = DeviceBuffer<int>(Extents{bins + 1});
  sub_offset_ = DeviceBuffer<int>(Extents{bins + 1});
  sub_bin_ = DeviceBuffer<int>(Extents{cap / kSub + bins + 1});
  std::size_t bytes = 0;
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, count_.data(), offset_.data(), int(bins + 1),
                                           static_cast<cudaStream_t>(stream)));
  scan_temp_ = DeviceBuffer<unsigned char>(Extents{std::max<std::size_t>(bytes, 1)});
  gpu::synchronize(stream);
}

void NufftPlanCuda3d::set_points(const float* d_traj, std::size_t n) {
  if (n > capacity_)
    throw InputError("nufft plan 3d: " + std::to_string(n) + " points exceed the planned capacity " +
                     std::to_string(capacity_));
  n_ = n;
  d_traj_ = d_traj;
  auto stream = static_cast<cudaStream_t>(stream_);
  const int bins = bins_[0] * bins_[1] * bins_[2];
  const Grid3 g{grid_[0], grid_[1], grid_[2]}, nb{bins_[0], bins_[1], bins_[2]};
  CUDA_CHECK(cudaMemsetAsync(count_.data(), 0, count_.size() * sizeof(int), stream));
  const unsigned blocks = unsigned((n + 255) / 256);
  if (blocks) {
    bin_points<<<blocks, 256, 0, stream>>>(d_traj, long(n), g, kernel_.width, nb, count_.data(),
                                           bin_of_.data(), rank_.data());
    CUDA_CHECK_LAUNCH("bin_points");
  }
  std::size_t bytes = scan_temp_.size();
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp_.data(), bytes, count_.data(), offset_.data(), bins + 1,
                                           stream));
  if (blocks) {
    scatter_points<<<blocks, 256, 0, stream>>>(long(n), bin_of_.data(), rank_.data(), offset_.data(),
                                               sorted_.data());
    CUDA_CHECK_LAUNCH("scatter_points");
  }
  const unsigned bin_blocks = unsigned((bins + 1 + 255) / 256);
  count_subproblems<<<bin_blocks, 256, 0, stream>>>(count_.data(), bins, sub_count_.data());
  CUDA_CHECK_LAUNCH("count_subproblems");
  CUDA_CHECK(cub::DeviceScan::ExclusiveSum(scan_temp_.data(), bytes, sub_count_.data(), sub_offset_.data(),
                                           bins + 1, stream));
  fill_subproblems<<<bin_blocks, 256, 0, stream>>>(sub_count_.data(), sub_offset_.data(), bins,
                                                   sub_bin_.data());
  CUDA_CHECK_LAUNCH("fill_subproblems");
}

void NufftPlanCuda3d::spread(const cfloat* d_samples, cfloat* d_grids, int batch) {
  if (!d_traj_) throw InputError("nufft plan 3d: spread before set_points");
  if (batch < 1) return;
  auto stream = static_cast<cudaStream_t>(stream_);
  CUDA_CHECK(cudaMemsetAsync(d_grids, 0, std::size_t(batch) * grid_size() * sizeof(cfloat), stream));
  if (n_ == 0) return;
  const int bins = bins_[0] * bins_[1] * bins_[2];
  const Grid3 g{grid_[0], grid_[1], grid_[2]}, nb{bins_[0], bins_[1], bins_[2]};
  const dim3 blocks(unsigned(n_ / kSub + bins + 1), unsigned(batch));
  with_width(kernel_.width, [&](auto wmax) {
    spread_subproblems<decltype(wmax)::value><<<blocks, kSub, tile_bytes_, stream>>>(
        reinterpret_cast<const float2*>(d_samples), d_traj_, long(n_), g, kernel_.width, nb, d_lut_.data(),
        res_, edge_, offset_.data(), sub_offset_.data(), sub_bin_.data(), sorted_.data(), bins,
        reinterpret_cast<float2*>(d_grids));
  });
  CUDA_CHECK_LAUNCH("spread_subproblems");
}

void NufftPlanCuda3d::interp(const cfloat* d_grids, cfloat* d_samples, int batch) {
  if (!d_traj_) throw InputError("nufft plan 3d: interp before set_points");
  if (n_ == 0 || batch < 1) return;
  auto stream = static_cast<cudaStream_t>(stream_);
  CUDA_CHECK(cudaMemsetAsync(d_samples, 0, std::size_t(batch) * n_ * sizeof(cfloat), stream));
  const int bins = bins_[0] * bins_[1] * bins_[2];
  const Grid3 g{grid_[0], grid_[1], grid_[2]};
  with_width(kernel_.width, [&](auto wmax) {
    const dim3 blocks(unsigned((n_ + 255) / 256), unsigned((batch + kInterpCoils - 1) / kInterpCoils));
    interp_points3<decltype(wmax)::value><<<blocks, 256, 0, stream>>>(
        reinterpret_cast<const float2*>(d_grids), d_traj_, long(n_), batch, g, kernel_.width, d_lut_.data(),
        res_, edge_, sorted_.data(), offset_.data() + bins, reinterpret_cast<float2*>(d_samples));
  });
  CUDA_CHECK_LAUNCH("interp_points3");
}

}  // namespace radstream
