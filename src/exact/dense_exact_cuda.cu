// The stored exact matrix on the GPU (see dense_exact.hpp): d = G x with a warp per row, x = G^H d with a
// thread per pair of columns and the rows cut into chunks (partial sums in double, added in chunk order).
// Both read G as float4 (two entries) along its rows, so every load is coalesced; products and sums in double
// (the entries are float, so the products are exact). Memory-bound: one pass over G (M x ld x 8 bytes) per
// application.
#include <algorithm>

#include "exact/dense_exact.hpp"
#include "exact/exact_cuda.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream {

namespace {

constexpr int kThreads = 256;
constexpr int kRowRun = 4;           // the adjoint's chunks are whole multiples of this many rows
constexpr int kMaxChunkRows = 1024;  // rows of d staged in shared memory per chunk
constexpr long long kTargetThreads = 1 << 18;

unsigned blocks(long long threads) {
  return unsigned((threads + kThreads - 1) / kThreads);
}

// y[row] = sum_v G[row][v] x[v]: a warp per row, lane l takes the float4s l, l + 32, ...; a fixed shuffle
// tree.
__global__ void __launch_bounds__(kThreads)
    dense_forward(const float4* __restrict__ g, const float2* __restrict__ x, long long M, long long V,
                  long long ld2, float2* __restrict__ y) {
  const long long row = (blockIdx.x * (long long)kThreads + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (row >= M) return;  // whole warps leave together
  const float4* r = g + row * ld2;
  double sr = 0.0, si = 0.0;
#pragma unroll 4
  for (long long p = lane; p < ld2; p += 32) {
    const float4 e = r[p];
    const float2 x0 = x[2 * p];
    const float2 x1 = 2 * p + 1 < V ? x[2 * p + 1] : make_float2(0.0f, 0.0f);
    sr = fma(double(e.x), double(x0.x), fma(-double(e.y), double(x0.y), sr));
    si = fma(double(e.x), double(x0.y), fma(double(e.y), double(x0.x), si));
    sr = fma(double(e.z), double(x1.x), fma(-double(e.w), double(x1.y), sr));
    si = fma(double(e.z), double(x1.y), fma(double(e.w), double(x1.x), si));
  }
  for (int d = 16; d > 0; d >>= 1) {
    sr += __shfl_down_sync(0xffffffffu, sr, d);
    si += __shfl_down_sync(0xffffffffu, si, d);
  }
  if (lane == 0) y[row] = make_float2(float(sr), float(si));
}

// part[chunk][2p, 2p + 1] = sum over the chunk's rows of conj(G[row][2p..2p+1]) d[row].
__global__ void __launch_bounds__(kThreads)
    dense_adjoint(const float4* __restrict__ g, const float2* __restrict__ d, long long M, long long ld2,
                  int rows, double2* __restrict__ part) {
  __shared__ float2 s_d[kMaxChunkRows];
  const long long r0 = (long long)blockIdx.y * rows, r1 = min(M, r0 + rows);
  for (long long r = r0 + threadIdx.x; r < r1; r += kThreads) s_d[r - r0] = d[r];
  __syncthreads();
  const long long p = blockIdx.x * (long long)kThreads + threadIdx.x;
  if (p >= ld2) return;
  double a0r = 0, a0i = 0, a1r = 0, a1i = 0;
#pragma unroll 4
  for (long long r = r0; r < r1; ++r) {
    const float4 e = g[r * ld2 + p];
    const float2 dv = s_d[r - r0];
    const double dr = dv.x, di = dv.y;
    a0r = fma(double(e.x), dr, fma(double(e.y), di, a0r));  // conj(e0) d
    a0i = fma(double(e.x), di, fma(-double(e.y), dr, a0i));
    a1r = fma(double(e.z), dr, fma(double(e.w), di, a1r));
    a1i = fma(double(e.z), di, fma(-double(e.w), dr, a1i));
  }
  double2* out = part + 2 * (blockIdx.y * ld2 + p);
  out[0] = make_double2(a0r, a0i);
  out[1] = make_double2(a1r, a1i);
}

// x[v] = sum over the chunks of part[chunk][v]: a block takes 32 outputs; its 32 warps each add every 32nd
// chunk (a warp reads 32 consecutive outputs: coalesced), then the 32 sums are added in warp order.
constexpr int kSumOutputs = 32, kSumGroups = 32, kSumThreads = kSumOutputs * kSumGroups;

__global__ void __launch_bounds__(kSumThreads)
    dense_sum_chunks(const double2* __restrict__ part, int chunks, long long V, long long ld,
                     float2* __restrict__ x) {
  __shared__ double2 s_sum[kSumGroups][kSumOutputs];
  const int o = threadIdx.x % kSumOutputs, grp = threadIdx.x / kSumOutputs;
  const long long v = blockIdx.x * (long long)kSumOutputs + o;
  double sr = 0.0, si = 0.0;
  if (v < V)
#pragma unroll 4
    for (int c = grp; c < chunks; c += kSumGroups) {
      const double2 a = part[c * ld + v];
      sr += a.x;
      si += a.y;
    }
  s_sum[grp][o] = make_double2(sr, si);
  __syncthreads();
  if (grp == 0 && v < V) {
    for (int q = 1; q < kSumGroups; ++q) {
      sr += s_sum[q][o].x;
      si += s_sum[q][o].y;
    }
    x[v] = make_float2(float(sr), float(si));
  }
}

// z = G^H G x in one pass over G (the normal operator CG applies): a block per SM takes a range of rows, a
// batch of R rows at a time; each thread holds K float4s (2K entries) of those rows and computes their share
// of y_row = G_row x; the block adds the shares (warp shuffles, then the warps in order through shared
// memory, the buffer alternating between batches; the next batch's loads are in flight meanwhile), and every
// thread then adds conj(G_row) y_row to its columns' double sums from the entries it still holds. y stays in
// double. Needs K x 2 x kNormalThreads >= V (else normal() is forward() then adjoint()).
constexpr int kNormalThreads = 512, kNormalWarps = kNormalThreads / 32;
// Rows per batch: 2 while the batch and the next one (prefetched) fit the registers, 1 at K = 4.
template <int K>
constexpr int normal_rows() {
  return K == 4 ? 1 : 2;
}

template <int K, int R>
__device__ __forceinline__ void load_rows(const float4* __restrict__ g, long long base, long long r1,
                                          long long ld2, float4 (&e)[R][K]) {
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const long long p = threadIdx.x + (long long)k * kNormalThreads;
      e[r][k] = base + r < r1 && p < ld2 ? g[(base + r) * ld2 + p] : make_float4(0, 0, 0, 0);
    }
}

template <int K, int R>
__global__ void __launch_bounds__(kNormalThreads, 1)
    dense_normal(const float4* __restrict__ g, const float2* __restrict__ x, long long M, long long V,
                 long long ld2, int rows, double2* __restrict__ part) {
  __shared__ double2 s_red[2][kNormalWarps][R];
  // x by pairs in double, in (dynamic) shared memory: converted once, not per row, and off the registers.
  extern __shared__ double2 s_x[];  // [K * kNormalThreads][2]
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const long long p = threadIdx.x + (long long)k * kNormalThreads;
    const float2 x0 = 2 * p < V ? x[2 * p] : make_float2(0.0f, 0.0f);
    const float2 x1 = 2 * p + 1 < V ? x[2 * p + 1] : make_float2(0.0f, 0.0f);
    s_x[2 * (k * kNormalThreads + threadIdx.x)] = make_double2(x0.x, x0.y);
    s_x[2 * (k * kNormalThreads + threadIdx.x) + 1] = make_double2(x1.x, x1.y);
  }
  double acc[K][4];
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k][0] = acc[k][1] = acc[k][2] = acc[k][3] = 0.0;
  const long long r0 = (long long)blockIdx.x * rows, r1 = min(M, r0 + rows);
  int parity = 0;
  float4 e[R][K], next[R][K];
  load_rows<K, R>(g, r0, r1, ld2, e);
  for (long long base = r0; base < r1; base += R) {
    load_rows<K, R>(g, base + R, r1, ld2, next);  // in flight while this batch is summed
#pragma unroll
    for (int r = 0; r < R; ++r) {
      double dr = 0.0, di = 0.0;
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const float4 a = e[r][k];
        const double2 b0 = s_x[2 * (k * kNormalThreads + threadIdx.x)],
                      b1 = s_x[2 * (k * kNormalThreads + threadIdx.x) + 1];
        dr = fma(double(a.x), b0.x, fma(-double(a.y), b0.y, dr));
        di = fma(double(a.x), b0.y, fma(double(a.y), b0.x, di));
        dr = fma(double(a.z), b1.x, fma(-double(a.w), b1.y, dr));
        di = fma(double(a.z), b1.y, fma(double(a.w), b1.x, di));
      }
      for (int d = 16; d > 0; d >>= 1) {
        dr += __shfl_down_sync(0xffffffffu, dr, d);
        di += __shfl_down_sync(0xffffffffu, di, d);
      }
      if (lane == 0) s_red[parity][warp][r] = make_double2(dr, di);
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r) {
      double yr = 0.0, yi = 0.0;
      for (int w = 0; w < kNormalWarps; ++w) {
        const double2 t = s_red[parity][w][r];
        yr += t.x;
        yi += t.y;
      }
#pragma unroll
      for (int k = 0; k < K; ++k) {  // conj(e) y
        const float4 a = e[r][k];
        acc[k][0] = fma(double(a.x), yr, fma(double(a.y), yi, acc[k][0]));
        acc[k][1] = fma(double(a.x), yi, fma(-double(a.y), yr, acc[k][1]));
        acc[k][2] = fma(double(a.z), yr, fma(double(a.w), yi, acc[k][2]));
        acc[k][3] = fma(double(a.z), yi, fma(-double(a.w), yr, acc[k][3]));
      }
    }
    parity ^= 1;
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int k = 0; k < K; ++k) e[r][k] = next[r][k];
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const long long p = threadIdx.x + (long long)k * kNormalThreads;
    if (p < ld2) {
      double2* out = part + 2 * (blockIdx.x * ld2 + p);
      out[0] = make_double2(acc[k][0], acc[k][1]);
      out[1] = make_double2(acc[k][2], acc[k][3]);
    }
  }
}

// The smallest K (1, 2, 4) whose K x kNormalThreads float4s cover a row; 0: too wide for the fused kernel.
int normal_k(long long ld2) {
  for (int k : {1, 2, 4})
    if (ld2 <= (long long)k * kNormalThreads) return k;
  return 0;
}

}  // namespace

DenseExactOperatorCuda::DenseExactOperatorCuda(ExactOperatorCuda& source, bool compute_now)
    : LinearOperator(source.domain(), source.codomain(), Location::Device),
      source_(source),
      stream_(source.stream()),
      M_(source.codomain().size()),
      V_(source.domain().size()),
      ld_(V_ + V_ % 2) {
  const long long ld2 = (long long)ld_ / 2;
  int rows = int(std::clamp<long long>((long long)M_ * ld2 / kTargetThreads, kRowRun, kMaxChunkRows));
  rows_ = (rows + kRowRun - 1) / kRowRun * kRowRun;
  chunks_ = int((M_ + rows_ - 1) / rows_);
  if (normal_k(ld2) > 0) {
    int device = 0, sms = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    normal_rows_ = int((M_ + sms - 1) / sms);
    normal_rows_ = (normal_rows_ + 1) / 2 * 2;  // whole batches of either size
    normal_blocks_ = int((M_ + normal_rows_ - 1) / normal_rows_);
    const int smem =
        4 * kNormalThreads * 2 * int(sizeof(double2));  // K = 4's x: 64 KiB, above the default 48
    CUDA_CHECK(cudaFuncSetAttribute(dense_normal<4, normal_rows<4>()>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  }
  g_ = DeviceBuffer<cfloat>(Extents{M_ * ld_});
  partials_ =
      DeviceBuffer<std::complex<double>>(Extents{std::size_t(std::max(chunks_, normal_blocks_)) * ld_});
  if (compute_now) compute();
}

void DenseExactOperatorCuda::compute() {
  source_.matrix(g_.data(), ld_);
}

void DenseExactOperatorCuda::normal(const cfloat* d_x, cfloat* d_z) {
  const long long ld2 = (long long)ld_ / 2;
  const int k = normal_k(ld2);
  if (k == 0) {
    LinearOperator::normal(d_x, d_z);
    return;
  }
  auto s = static_cast<cudaStream_t>(stream_);
  const auto* g = reinterpret_cast<const float4*>(g_.data());
  const auto* x = reinterpret_cast<const float2*>(d_x);
  auto* part = reinterpret_cast<double2*>(partials_.data());
  const long long M = (long long)M_, V = (long long)V_;
  const std::size_t smem = std::size_t(k) * kNormalThreads * 2 * sizeof(double2);
  if (k == 1)
    dense_normal<1, normal_rows<1>()>
        <<<normal_blocks_, kNormalThreads, smem, s>>>(g, x, M, V, ld2, normal_rows_, part);
  else if (k == 2)
    dense_normal<2, normal_rows<2>()>
        <<<normal_blocks_, kNormalThreads, smem, s>>>(g, x, M, V, ld2, normal_rows_, part);
  else
    dense_normal<4, normal_rows<4>()>
        <<<normal_blocks_, kNormalThreads, smem, s>>>(g, x, M, V, ld2, normal_rows_, part);
  CUDA_CHECK_LAUNCH("dense exact normal");
  dense_sum_chunks<<<unsigned((V + kSumOutputs - 1) / kSumOutputs), kSumThreads, 0, s>>>(
      part, normal_blocks_, V, (long long)ld_, reinterpret_cast<float2*>(d_z));
  CUDA_CHECK_LAUNCH("dense exact normal sum");
}

DenseExactOperatorCuda::~DenseExactOperatorCuda() = default;

void DenseExactOperatorCuda::forward(const cfloat* d_x, cfloat* d_y) {
  auto s = static_cast<cudaStream_t>(stream_);
  dense_forward<<<blocks(32LL * (long long)M_), kThreads, 0, s>>>(
      reinterpret_cast<const float4*>(g_.data()), reinterpret_cast<const float2*>(d_x), (long long)M_,
      (long long)V_, (long long)ld_ / 2, reinterpret_cast<float2*>(d_y));
  CUDA_CHECK_LAUNCH("dense exact forward");
}

void DenseExactOperatorCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  auto s = static_cast<cudaStream_t>(stream_);
  const long long ld2 = (long long)ld_ / 2;
  auto* part = reinterpret_cast<double2*>(partials_.data());
  dense_adjoint<<<dim3(blocks(ld2), unsigned(chunks_)), kThreads, 0, s>>>(
      reinterpret_cast<const float4*>(g_.data()), reinterpret_cast<const float2*>(d_y), (long long)M_, ld2,
      rows_, part);
  CUDA_CHECK_LAUNCH("dense exact adjoint");
  dense_sum_chunks<<<unsigned((V_ + kSumOutputs - 1) / kSumOutputs), kSumThreads, 0, s>>>(
      reinterpret_cast<const double2*>(partials_.data()), chunks_, (long long)V_, (long long)ld_,
      reinterpret_cast<float2*>(d_x));
  CUDA_CHECK_LAUNCH("dense exact sum chunks");
}

}  // namespace radstream
