// The Toeplitz normal operator's FFT work on the custom FFT engine (toeplitz_fft_cuda.hpp).
#include <string>

#include "core/error.hpp"
#include "fft/custom_fft.cuh"
#include "gpu/cuda_check.cuh"
#include "noncart/conj_product.cuh"
#include "noncart/toeplitz_fft_cuda.hpp"

namespace radstream {
namespace {

using namespace customfft;

// blockIdx.x: TB of the [images * coils * N] rows (row t = c N + y, channel c = g coils + k seeing image g).
// mid[t][e] = FFT_M(S_c[y] x_g[y], zero-padded)[e].
template <int M>
__global__ void __launch_bounds__(RowShape<M>::threads)
    expand_rows(const float2* __restrict__ maps, const float2* __restrict__ x, long rows, int N, int coils,
                const float2* __restrict__ tw, float2* __restrict__ mid) {
  using S = RowShape<M>;
  extern __shared__ float2 s[];
  const int l = threadIdx.x, tb = l / S::T;
  const long t = long(blockIdx.x) * S::TB + tb;
  const bool ok = t < rows;
  const float2* mrow = maps + (ok ? t : 0) * N;
  const float2* xrow = x + (ok ? (t / N / coils) * N + t % N : 0) * N;
  float2* dst = mid + (ok ? t : 0) * M;
  fft_transform<M, S::E, false, RowLayout>(
      s + tb * RowLayout::stride(M), l % S::T, tw,
      [&](int e) { return ok && e < N ? conjprod::cmul(mrow[e], xrow[e]) : make_float2(0.f, 0.f); },
      [&](int e, float2 v) {
        if (ok) dst[e] = v;
      });
}

// blockIdx.x: TB adjacent columns; blockIdx.y: coil. Column x of mid (its N rows, the rest zero) ->
// FFT_M -> times kernel column x -> inverse FFT_M -> its first N outputs, in place.
template <int M>
__global__ void __launch_bounds__(ColShape<M>::threads)
    convolve_cols(float2* __restrict__ mid, int N, const float* __restrict__ kernel,
                  const float2* __restrict__ tw) {
  using S = ColShape<M>;
  using L = ColLayout<S::TB>;
  static_assert(M % S::TB == 0, "whole column groups");
  extern __shared__ float2 s[];
  const int l = threadIdx.x, tb = l % S::TB, tid = l / S::TB;
  const int x = int(blockIdx.x) * S::TB + tb;
  float2* col = mid + size_t(blockIdx.y) * N * M + x;
  float2* st = s + tb;
  fft_transform<M, S::E, false, L>(
      st, tid, tw, [&](int e) { return e < N ? col[size_t(e) * M] : make_float2(0.f, 0.f); },
      [&](int e, float2 v) {
        const float k = __ldg(kernel + size_t(e) * M + x);
        st[L::at(e)] = make_float2(v.x * k, v.y * k);
      });
  __syncthreads();
  fft_transform_shared<M, S::E, true, L>(st, tid, tw, [&](int e, float2 v) {
    if (e < N) col[size_t(e) * M] = v;
  });
}

// The back rows' block: TB transforms of M points side by side; each takes coils tb, tb + TB, ...
template <int M>
struct BackShape : SideBySideShape<M> {
  template <class T2>
  static constexpr int smem = SideBySideShape<M>::fft_smem + SideBySideShape<M>::TB*(M / 2) * int(sizeof(T2));
};

// blockIdx.x: image row y, blockIdx.y: image g (its coils' rows and maps from channel g coils).
// z[y][x] = sum_c conj(S_c[y][x]) IFFT_M(mid[c][y])[x], x < N. Each thread adds
// into accumulator cells of its transform's own (the store's element-to-thread mapping does not depend on
// the data, so the same thread owns the same cells for every coil); the TB partial rows are then added in a
// fixed order.
template <int M, class T2>
__global__ void __launch_bounds__(BackShape<M>::threads)
    crop_combine_rows(const float2* __restrict__ mid, const float2* __restrict__ maps, int N, int coils,
                      const float2* __restrict__ tw, T2* __restrict__ z) {
  using S = BackShape<M>;
  extern __shared__ float2 s[];
  T2* acc = reinterpret_cast<T2*>(s + S::TB * RowLayout::stride(M));
  const int l = threadIdx.x, tb = l / S::T, tid = l % S::T;
  const int y = int(blockIdx.x);
  const size_t g = blockIdx.y;
  mid += g * coils * size_t(N) * M;
  maps += g * coils * size_t(N) * N;
  z += g * size_t(N) * N;
  float2* st = s + tb * RowLayout::stride(M);
  T2* a = acc + tb * N;
  for (int e = tid; e < N; e += S::T) a[e] = T2{};
  __syncthreads();
  for (int c0 = 0; c0 < coils; c0 += S::TB) {
    const int c = c0 + tb;
    const bool ok = c < coils;
    const float2* row = mid + (size_t(ok ? c : 0) * N + y) * M;
    const float2* mrow = maps + (size_t(ok ? c : 0) * N + y) * N;
    fft_transform<M, S::E, true, RowLayout>(
        st, tid, tw, [&](int e) { return ok ? row[e] : make_float2(0.f, 0.f); },
        [&](int e, float2 v) {
          if (ok && e < N) conjprod::add_conj_product(a[e], mrow[e], v);
        });
  }
  __syncthreads();
  for (int e = l; e < N; e += S::threads) {
    T2 sum = acc[e];
    for (int k = 1; k < S::TB; ++k) conjprod::add(sum, acc[k * N + e]);
    z[size_t(y) * N + e] = sum;
  }
}

template <int M, class T2>
void set_limits() {
  CUDA_CHECK(cudaFuncSetAttribute(crop_combine_rows<M, T2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  BackShape<M>::template smem<T2>));
}

}  // namespace

bool ToeplitzFftCuda::supports(int matrix) {
  return supported(2 * matrix);
}

ToeplitzFftCuda::ToeplitzFftCuda(int matrix, int coils, gpu::StreamRef stream, int images)
    : N_(matrix), coils_(coils), images_(images), stream_(stream) {
  if (!supports(matrix) || coils < 1 || images < 1)
    throw ConfigError(
        "sense: the custom Toeplitz FFT takes a power-of-two matrix of 32..1024, >= 1 coil and >= 1 image; "
        "matrix " +
        std::to_string(matrix) + ", coils " + std::to_string(coils) + ", images " + std::to_string(images));
  const int M = 2 * matrix;
  const auto tw = twiddle_table(M);
  tw_ = DeviceBuffer<cfloat>(Extents{tw.size()});
  mid_ = DeviceBuffer<cfloat>(
      Extents{std::size_t(images) * std::size_t(coils), std::size_t(matrix), std::size_t(M)});
  gpu::copy_to_device(tw_.data(), tw.data(), tw.size() * sizeof(cfloat), stream);
  dispatch_size(M, [&]<int G>() {
    CUDA_CHECK(
        cudaFuncSetAttribute(expand_rows<G>, cudaFuncAttributeMaxDynamicSharedMemorySize, RowShape<G>::smem));
    CUDA_CHECK(cudaFuncSetAttribute(convolve_cols<G>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    ColShape<G>::smem));
    set_limits<G, float2>();
    set_limits<G, double2>();
  });
  gpu::synchronize(stream);  // the host table above is a temporary
}

template <class T2>
void ToeplitzFftCuda::run(const cfloat* d_maps, const cfloat* d_x, const float* d_kernel_re, T2* d_z) {
  auto stream = static_cast<cudaStream_t>(stream_);
  const auto* tw = reinterpret_cast<const float2*>(tw_.data());
  auto* mid = reinterpret_cast<float2*>(mid_.data());
  const auto* maps = reinterpret_cast<const float2*>(d_maps);
  dispatch_size(2 * N_, [&]<int G>() {
    using R = RowShape<G>;
    using C = ColShape<G>;
    using B = BackShape<G>;
    const long channels = long(images_) * coils_, rows = channels * N_;
    expand_rows<G><<<unsigned((rows + R::TB - 1) / R::TB), R::threads, R::smem, stream>>>(
        maps, reinterpret_cast<const float2*>(d_x), rows, N_, coils_, tw, mid);
    CUDA_CHECK_LAUNCH("toeplitz expand_rows");
    convolve_cols<G><<<dim3(unsigned(G / C::TB), unsigned(channels)), C::threads, C::smem, stream>>>(
        mid, N_, d_kernel_re, tw);
    CUDA_CHECK_LAUNCH("toeplitz convolve_cols");
    crop_combine_rows<G, T2>
        <<<dim3(unsigned(N_), unsigned(images_)), B::threads, B::template smem<T2>, stream>>>(
            mid, maps, N_, coils_, tw, d_z);
    CUDA_CHECK_LAUNCH("toeplitz crop_combine_rows");
  });
}

void ToeplitzFftCuda::apply(const cfloat* d_maps, const cfloat* d_x, const float* d_kernel_re, cfloat* d_z) {
  run(d_maps, d_x, d_kernel_re, reinterpret_cast<float2*>(d_z));
}

void ToeplitzFftCuda::apply(const cfloat* d_maps, const cfloat* d_x, const float* d_kernel_re,
                            std::complex<double>* d_z) {
  run(d_maps, d_x, d_kernel_re, reinterpret_cast<double2*>(d_z));
}

}  // namespace radstream
