// The forward NUFFT's head on the custom FFT engine (nufft_pad_fft_cuda.hpp).
#include <string>

#include "fft/custom_fft.cuh"
#include "gpu/cuda_check.cuh"
#include "gpu/dependent_launch.cuh"
#include "noncart/grid_layout.cuh"
#include "noncart/nufft_pad_fft_cuda.hpp"

namespace radstream {
namespace {

using namespace customfft;

// blockIdx.x: TB rows of the [batch * N] image rows. mid: [batch][N][G].
template <int G>
__global__ void __launch_bounds__(RowShape<G>::threads)
    pad_rows(const float2* __restrict__ img, long rows, int N, const float* __restrict__ factor,
             const float2* __restrict__ tw, float2* __restrict__ mid) {
  using S = RowShape<G>;
  extern __shared__ float2 s[];
  gpu::wait_for_previous();  // launched dependent: the images after the kernels that wrote them
  gpu::allow_dependents();
  const int l = threadIdx.x, tb = l / S::T;
  const long t = long(blockIdx.x) * S::TB + tb;
  const bool ok = t < rows;
  const float2* row = img + (ok ? t : 0) * N;
  const float fy = factor[ok ? int(t % N) : 0];
  float2* dst = mid + (ok ? t : 0) * G;
  fft_transform<G, S::E, false, RowLayout>(
      s + tb * RowLayout::stride(G), l % S::T, tw,
      [&](int e) {
        const int x = image_index(e, G, N);
        if (!ok || x < 0) return make_float2(0.f, 0.f);
        const float2 v = row[x];
        const float f = __ldg(factor + x) * fy;
        return make_float2(v.x * f, v.y * f);
      },
      [&](int e, float2 v) {
        if (ok) dst[e] = v;
      });
}

// blockIdx.x: TB adjacent grid columns; blockIdx.y: batch item. grid: [batch][G][G] in 8 x 8 cell tiles
// (grid_layout.cuh).
template <int G>
__global__ void __launch_bounds__(ColShape<G>::threads)
    pad_cols(const float2* __restrict__ mid, int N, const float2* __restrict__ tw,
             float2* __restrict__ grid) {
  using S = ColShape<G>;
  static_assert(G % S::TB == 0, "whole column groups");
  extern __shared__ float2 s[];
  gpu::wait_for_previous();  // launched dependent: pad_rows' middle
  gpu::allow_dependents();
  const int l = threadIdx.x, tb = l % S::TB;
  const int x = int(blockIdx.x) * S::TB + tb;
  const float2* col = mid + size_t(blockIdx.y) * N * G + x;
  float2* out = grid + size_t(blockIdx.y) * G * G;
  fft_transform<G, S::E, false, ColLayout<S::TB>>(
      s + tb, l / S::TB, tw,
      [&](int e) {
        const int y = image_index(e, G, N);
        return y >= 0 ? col[size_t(y) * G] : make_float2(0.f, 0.f);
      },
      [&](int e, float2 v) { out[gridlayout::tiled(e, x, G)] = v; });
}

}  // namespace

bool PadFftCuda::supports(int grid) {
  return supported(grid);
}

PadFftCuda::PadFftCuda(int matrix, int grid, int batch, const AxisApodization& ap, gpu::StreamRef stream)
    : N_(matrix), G_(grid), batch_(batch), stream_(stream) {
  if (!supports(grid) || matrix < 2 || matrix > grid || ap.src.size() != std::size_t(matrix) ||
      ap.factor.size() != std::size_t(matrix))
    throw ConfigError(
        "nufft: the custom forward head takes a power-of-two grid of 64..2048 points and an "
        "apodization of the matrix; grid " +
        std::to_string(grid) + ", matrix " + std::to_string(matrix));
  for (int x = 0; x < matrix; ++x)  // the placement image_index() (custom_fft.cuh) inverts
    if (ap.src[std::size_t(x)] != ((x - matrix / 2) % grid + grid) % grid)
      throw ConfigError("nufft: the apodization places image index " + std::to_string(x) + " at grid index " +
                        std::to_string(ap.src[std::size_t(x)]) + ", not at (x - N/2) mod G");
  const auto tw = twiddle_table(grid);
  factor_ = DeviceBuffer<float>(Extents{ap.factor.size()});
  tw_ = DeviceBuffer<cfloat>(Extents{tw.size()});
  mid_ = DeviceBuffer<cfloat>(Extents{std::size_t(batch), std::size_t(matrix), std::size_t(grid)});
  gpu::copy_to_device(factor_.data(), ap.factor.data(), ap.factor.size() * sizeof(float), stream);
  gpu::copy_to_device(tw_.data(), tw.data(), tw.size() * sizeof(cfloat), stream);
  dispatch_size(grid, [&]<int G>() {
    CUDA_CHECK(
        cudaFuncSetAttribute(pad_rows<G>, cudaFuncAttributeMaxDynamicSharedMemorySize, RowShape<G>::smem));
    CUDA_CHECK(
        cudaFuncSetAttribute(pad_cols<G>, cudaFuncAttributeMaxDynamicSharedMemorySize, ColShape<G>::smem));
  });
  gpu::synchronize(stream);  // the host tables above are temporaries
}

void PadFftCuda::run(const cfloat* d_images, cfloat* d_grids) {
  auto stream = static_cast<cudaStream_t>(stream_);
  const auto* tw = reinterpret_cast<const float2*>(tw_.data());
  auto* mid = reinterpret_cast<float2*>(mid_.data());
  dispatch_size(G_, [&]<int G>() {
    using R = RowShape<G>;
    using C = ColShape<G>;
    const long rows = long(batch_) * N_;
    gpu::launch_dependent("pad_rows", pad_rows<G>, unsigned((rows + R::TB - 1) / R::TB), R::threads, R::smem,
                          stream, reinterpret_cast<const float2*>(d_images), rows, N_,
                          static_cast<const float*>(factor_.data()), tw, mid);
    gpu::launch_dependent("pad_cols", pad_cols<G>, dim3(unsigned(G / C::TB), unsigned(batch_)), C::threads,
                          C::smem, stream, static_cast<const float2*>(mid), N_, tw,
                          reinterpret_cast<float2*>(d_grids));
  });
}

}  // namespace radstream
