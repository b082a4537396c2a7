// The stored exact matrix on the GPU (see dense_exact.hpp): d = G x with a warp per row, x = G^H d with a thread
// per pair of columns and the rows cut into chunks (partial sums in double, added in chunk order). Both read G
// as float4 (two entries) along its rows, so every load is coalesced; products and sums in double (the entries
// are float, so the products are exact). Memory-bound: one pass over G (M x ld x 8 bytes) per application.
#include <algorithm>

#include "exact/dense_exact.hpp"
#include "exact/exact_cuda.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream {

namespace {

constexpr int kThreads = 256;
constexpr int kRowRun = 4;            // the adjoint's chunks are whole multiples of this many rows
constexpr int kMaxChunkRows = 1024;   // rows of d staged in shared memory per chunk
constexpr long long kTargetThreads = 1 << 18;

unsigned blocks(long long threads) { return unsigned((threads + kThreads - 1) / kThreads); }

// y[row] = sum_v G[row][v] x[v]: a warp per row, lane l takes the float4s l, l + 32, ...; a fixed shuffle tree.
__global__ void __launch_bounds__(kThreads) dense_forward(const float4* __restrict__ g, const float2* __restrict__ x,
                                                          long long M, long long V, long long ld2,
                                                          float2* __restrict__ y) {
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
__global__ void __launch_bounds__(kThreads) dense_adjoint(const float4* __restrict__ g, const float2* __restrict__ d,
                                                          long long M, long long ld2, int rows,
                                                          double2* __restrict__ part) {
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

// x[v] = sum over the chunks of part[chunk][v]: a warp per output, lanes over chunks, a fixed shuffle tree.
__global__ void __launch_bounds__(kThreads) dense_sum_chunks(const double2* __restrict__ part, int chunks, long long V,
                                                             long long ld, float2* __restrict__ x) {
  const long long v = (blockIdx.x * (long long)kThreads + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (v >= V) return;
  double sr = 0.0, si = 0.0;
  for (int c = lane; c < chunks; c += 32) {
    const double2 a = part[c * ld + v];
    sr += a.x;
    si += a.y;
  }
  for (int dd = 16; dd > 0; dd >>= 1) {
    sr += __shfl_down_sync(0xffffffffu, sr, dd);
    si += __shfl_down_sync(0xffffffffu, si, dd);
  }
  if (lane == 0) x[v] = make_float2(float(sr), float(si));
}

}  // namespace

DenseExactOperatorCuda::DenseExactOperatorCuda(ExactOperatorCuda& source)
    : LinearOperator(source.domain(), source.codomain(), Location::Device),
      stream_(source.stream()),
      M_(source.codomain().size()),
      V_(source.domain().size()),
      ld_(V_ + V_ % 2) {
  const long long ld2 = (long long)ld_ / 2;
  int rows = int(std::clamp<long long>((long long)M_ * ld2 / kTargetThreads, kRowRun, kMaxChunkRows));
  rows_ = (rows + kRowRun - 1) / kRowRun * kRowRun;
  chunks_ = int((M_ + rows_ - 1) / rows_);
  g_ = DeviceBuffer<cfloat>(Extents{M_ * ld_});
  partials_ = DeviceBuffer<std::complex<double>>(Extents{std::size_t(chunks_) * ld_});
  source.matrix(g_.data(), ld_);
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
      reinterpret_cast<const float4*>(g_.data()), reinterpret_cast<const float2*>(d_y), (long long)M_, ld2, rows_,
      part);
  CUDA_CHECK_LAUNCH("dense exact adjoint");
  dense_sum_chunks<<<blocks(32LL * (long long)V_), kThreads, 0, s>>>(
      reinterpret_cast<const double2*>(partials_.data()), chunks_, (long long)V_, (long long)ld_,
      reinterpret_cast<float2*>(d_x));
  CUDA_CHECK_LAUNCH("dense exact sum chunks");
}

}  // namespace radstream
