#include <algorithm>
#include <string>

#include "core/error.hpp"
#include "exact/segmented_toeplitz.hpp"
#include "fft/toeplitz_kernel.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream {
namespace {

constexpr int kThreads = 256;
constexpr std::size_t kChunkBytes = std::size_t(256) << 20;  // per 2N-grid buffer

__device__ inline float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ inline float2 cmul_conj(float2 a, float2 b) {  // conj(a) b
  return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}

// pad[k][l][y][x] = maps[c0 + k][y][x] e[l][y][x] x[y][x] on the top-left N x N of each 2N grid (the rest
// stays 0).
__global__ void expand(const float2* __restrict__ maps, const float2* __restrict__ e,
                       const float2* __restrict__ x, int N, int L, int c0, float2* __restrict__ pad) {
  const int xx = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (xx >= N) return;
  const int k = int(blockIdx.z) / L, l = int(blockIdx.z) % L;
  const std::size_t V = std::size_t(N) * N, p = std::size_t(y) * N + xx, M = 2 * std::size_t(N);
  pad[(std::size_t(blockIdx.z) * M + y) * M + xx] =
      cmul(cmul(maps[std::size_t(c0 + k) * V + p], e[l * V + p]), x[p]);
}

// Per cell of the 2N grid and every coil of the chunk: Y_l = sum_l' K_(l,l') X_l' (K real and symmetric in l,
// l').
template <int L>
__global__ void mix(float2* __restrict__ grids, const float* __restrict__ kernels, std::size_t cells,
                    int coils) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i >= cells) return;
  constexpr int P = L * (L + 1) / 2;
  float k[P];
#pragma unroll
  for (int p = 0; p < P; ++p) k[p] = kernels[std::size_t(p) * cells + i];
  for (int c = 0; c < coils; ++c) {
    float2 in[L];
#pragma unroll
    for (int l = 0; l < L; ++l) in[l] = grids[(std::size_t(c) * L + l) * cells + i];
#pragma unroll
    for (int l = 0; l < L; ++l) {
      float2 y = make_float2(0.f, 0.f);
#pragma unroll
      for (int lp = 0; lp < L; ++lp) {
        const int a = l < lp ? l : lp, b = l < lp ? lp : l;
        const float kv = k[a * L - a * (a - 1) / 2 + (b - a)];
        y.x = fmaf(kv, in[lp].x, y.x);
        y.y = fmaf(kv, in[lp].y, y.y);
      }
      grids[(std::size_t(c) * L + l) * cells + i] = y;
    }
  }
}

// z[p] (+)= sum_k conj(maps[c0 + k][p]) sum_l conj(e[l][p]) grids[k][l][y][x] over the top-left N x N.
template <bool ACCUMULATE>
__global__ void combine(const float2* __restrict__ maps, const float2* __restrict__ e,
                        const float2* __restrict__ grids, int N, int L, int c0, int coils,
                        float2* __restrict__ z) {
  const int xx = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (xx >= N) return;
  const std::size_t V = std::size_t(N) * N, p = std::size_t(y) * N + xx, M = 2 * std::size_t(N),
                    cells = M * M;
  float2 s = ACCUMULATE ? z[p] : make_float2(0.f, 0.f);
  for (int k = 0; k < coils; ++k) {
    float2 acc = make_float2(0.f, 0.f);
    for (int l = 0; l < L; ++l) {
      const float2 v =
          cmul_conj(e[l * V + p], grids[(std::size_t(k) * L + l) * cells + std::size_t(y) * M + xx]);
      acc.x += v.x;
      acc.y += v.y;
    }
    const float2 v = cmul_conj(maps[std::size_t(c0 + k) * V + p], acc);
    s.x += v.x;
    s.y += v.y;
  }
  z[p] = s;
}

template <int L>
void launch_mix(float2* grids, const float* kernels, std::size_t cells, int coils, cudaStream_t s) {
  mix<L><<<unsigned((cells + kThreads - 1) / kThreads), kThreads, 0, s>>>(grids, kernels, cells, coils);
}

}  // namespace

SegmentedToeplitzCuda::SegmentedToeplitzCuda(std::shared_ptr<LinearOperator> g,
                                             const SegmentedToeplitzSpec& spec, gpu::StreamRef stream)
    : LinearOperator(g->domain(), g->codomain(), Location::Device),
      g_(std::move(g)),
      stream_(stream),
      N_(spec.matrix),
      C_(spec.coils),
      L_(spec.segments),
      P_(spec.segments * (spec.segments + 1) / 2),
      chunk_(1),
      Mt_(check_segmented_toeplitz(*g_, spec)),
      maps_(spec.maps) {
  const TimeSegments seg = make_time_segments(spec.t, spec.segments);
  const std::vector<cfloat> e = segment_phasors(spec.fm, seg.times), w = segment_pair_weights(seg);
  const int M = 2 * N_;
  const std::size_t cells = std::size_t(M) * M, per_coil = std::size_t(L_) * cells * sizeof(cfloat);
  // The largest divisor of the coil count whose grids fit the chunk budget (at least one coil).
  for (int k = C_; k >= 1; --k)
    if (C_ % k == 0 && (std::size_t(k) * per_coil <= kChunkBytes || k == 1)) {
      chunk_ = k;
      break;
    }
  e_ = DeviceBuffer<cfloat>(Extents{e.size()});
  pair_w_ = DeviceBuffer<cfloat>(Extents{w.size()});
  pad_ = DeviceBuffer<cfloat>(Extents{std::size_t(chunk_) * L_, cells});
  grids_ = DeviceBuffer<cfloat>(Extents{std::size_t(chunk_) * L_, cells});
  t_ = DeviceBuffer<cfloat>(Extents{cells});
  work_ = DeviceBuffer<cfloat>(Extents{cells});
  kernels_ = DeviceBuffer<float>(Extents{std::size_t(P_), cells});
  fft_ = CufftPlan({M, M}, chunk_ * L_, stream);
  kfft_ = CufftPlan({M, M}, 1, stream);
  gpu::copy_to_device(e_.data(), e.data(), e.size() * sizeof(cfloat), stream);
  gpu::copy_to_device(pair_w_.data(), w.data(), w.size() * sizeof(cfloat), stream);
  gpu::memset_device(pad_.data(), 0, pad_.size() * sizeof(cfloat), stream);
  gpu::synchronize(stream);
}

void SegmentedToeplitzCuda::make_kernels(LinearOperator& psf) {
  const int M = 2 * N_;
  const std::size_t cells = std::size_t(M) * M;
  if (psf.domain().size() != cells || psf.codomain().size() != Mt_ || psf.location() != Location::Device)
    throw InputError("segmented Toeplitz: the PSF operator must map a device [" + std::to_string(M) + "][" +
                     std::to_string(M) + "] grid to " + std::to_string(Mt_) + " samples");
  for (int p = 0; p < P_; ++p) {
    psf.adjoint(pair_w_.data() + std::size_t(p) * Mt_, t_.data());
    toeplitz_kernel_cuda(t_.data(), N_, work_.data(), kfft_, kernels_.data() + std::size_t(p) * cells,
                         stream_);
  }
  ready_ = true;
}

void SegmentedToeplitzCuda::normal(const cfloat* d_x, cfloat* d_z) {
  if (!ready_) throw InputError("segmented Toeplitz: make_kernels() has not been called");
  auto s = static_cast<cudaStream_t>(stream_);
  const int M = 2 * N_;
  const std::size_t cells = std::size_t(M) * M;
  const unsigned bx = unsigned((N_ + kThreads - 1) / kThreads);
  auto* grids = reinterpret_cast<float2*>(grids_.data());
  const auto* maps = reinterpret_cast<const float2*>(maps_);
  const auto* e = reinterpret_cast<const float2*>(e_.data());
  for (int c0 = 0; c0 < C_; c0 += chunk_) {
    expand<<<dim3(bx, unsigned(N_), unsigned(chunk_ * L_)), kThreads, 0, s>>>(
        maps, e, reinterpret_cast<const float2*>(d_x), N_, L_, c0, reinterpret_cast<float2*>(pad_.data()));
    CUDA_CHECK_LAUNCH("segmented toeplitz expand");
    fft_.execute(pad_.data(), grids_.data(), FftDirection::Forward);
    switch (L_) {
      case 1:
        launch_mix<1>(grids, kernels_.data(), cells, chunk_, s);
        break;
      case 2:
        launch_mix<2>(grids, kernels_.data(), cells, chunk_, s);
        break;
      case 3:
        launch_mix<3>(grids, kernels_.data(), cells, chunk_, s);
        break;
      case 4:
        launch_mix<4>(grids, kernels_.data(), cells, chunk_, s);
        break;
      case 5:
        launch_mix<5>(grids, kernels_.data(), cells, chunk_, s);
        break;
      case 6:
        launch_mix<6>(grids, kernels_.data(), cells, chunk_, s);
        break;
      case 7:
        launch_mix<7>(grids, kernels_.data(), cells, chunk_, s);
        break;
      default:
        launch_mix<8>(grids, kernels_.data(), cells, chunk_, s);
        break;
    }
    CUDA_CHECK_LAUNCH("segmented toeplitz mix");
    fft_.execute(grids_.data(), FftDirection::Inverse);
    auto* z = reinterpret_cast<float2*>(d_z);
    if (c0 == 0)
      combine<false><<<dim3(bx, unsigned(N_)), kThreads, 0, s>>>(maps, e, grids, N_, L_, c0, chunk_, z);
    else
      combine<true><<<dim3(bx, unsigned(N_)), kThreads, 0, s>>>(maps, e, grids, N_, L_, c0, chunk_, z);
    CUDA_CHECK_LAUNCH("segmented toeplitz combine");
  }
}

}  // namespace radstream
