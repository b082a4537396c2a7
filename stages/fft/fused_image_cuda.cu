// The fused tail of the gridding chain on the custom FFT engine: [coils][G][G] oversampled grids ->
// [N][N] root-sum-of-squares image, in two kernels instead of inverse FFT + deapodize/crop + RSS.
//  1. rows: each row's inverse transform is computed in shared memory and only the N columns that survive
//     the crop are stored, already multiplied by the x half of the deapodization (which carries the
//     (-1)^x checkerboard that undoes the fftshift): [coils][G][N], half the bytes of the grid at sigma 2;
//  2. columns: a block takes TB image columns of a group of coils; each coil's column transforms are
//     computed in shared memory, the N surviving rows are multiplied by the y half of the deapodization and
//     their |.|^2 summed over the group in shared memory, then added to the image (one atomic per pixel and
//     group); a last tiny kernel takes the square root.
// The coil images are never written, which is what makes it faster; fft_fused: false keeps them.
#include <algorithm>
#include <string>

#include "deapodize/deapodize.hpp"
#include "fft/custom_fft.cuh"
#include "fft/fft.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "gridding/kaiser_bessel.hpp"

namespace radstream {
namespace {

using namespace customfft;

// blockIdx.x: TB rows of the [coils * G] rows. out: [coils][G][n].
template <int G>
__global__ void __launch_bounds__(RowShape<G>::threads)
    rows_crop(const float2* __restrict__ grid, long rows, int n, const int* __restrict__ src,
              const float* __restrict__ factor, const float2* __restrict__ tw, float2* __restrict__ out) {
  using S = RowShape<G>;
  extern __shared__ float2 s[];
  const int l = threadIdx.x;
  const long t0 = long(blockIdx.x) * S::TB;
  for (int i = l; i < S::TB * G; i += S::threads) {
    const int tb = i / G, e = i % G;
    if (t0 + tb < rows) s[tb * (G + 1) + e] = grid[(t0 + tb) * G + e];
  }
  fft_block<G, S::E, true>(s + (l / S::T) * (G + 1), l % S::T, tw);
  for (int i = l; i < S::TB * n; i += S::threads) {
    const int tb = i / n, x = i % n;
    if (t0 + tb >= rows) continue;
    const float2 v = s[tb * (G + 1) + src[x]];
    const float f = factor[x];
    out[(t0 + tb) * n + x] = make_float2(v.x * f, v.y * f);
  }
}

// blockIdx.x: TB image columns; blockIdx.y: group of coils_per coils. mid: [coils][G][n]; image: [n][n]
// (sum of squares accumulated in the real part).
template <int G>
__global__ void __launch_bounds__(ColShape<G>::threads)
    cols_rss(const float2* __restrict__ mid, int coils, int coils_per, int n, const int* __restrict__ src,
             const float* __restrict__ factor, const float2* __restrict__ tw, float2* __restrict__ image) {
  using S = ColShape<G>;
  extern __shared__ float2 s[];
  float* acc = reinterpret_cast<float*>(s + S::TB * (G + 1));  // [n][TB]
  const int l = threadIdx.x;
  const int x0 = blockIdx.x * S::TB;
  const int c_first = blockIdx.y * coils_per, c_last = min(coils, c_first + coils_per);
  for (int i = l; i < S::TB * n; i += S::threads) acc[i] = 0.f;
  for (int c = c_first; c < c_last; ++c) {
    const float2* m = mid + size_t(c) * G * n + x0;
    for (int i = l; i < S::TB * G; i += S::threads) {
      const int tb = i % S::TB, e = i / S::TB;
      s[tb * (G + 1) + e] = x0 + tb < n ? m[size_t(e) * n + tb] : make_float2(0.f, 0.f);
    }
    fft_block<G, S::E, true>(s + (l / S::T) * (G + 1), l % S::T, tw);
    for (int i = l; i < S::TB * n; i += S::threads) {
      const int tb = i % S::TB, y = i / S::TB;
      const float2 v = s[tb * (G + 1) + src[y]];
      const float f = factor[y];
      acc[i] += (v.x * v.x + v.y * v.y) * (f * f);
    }
    __syncthreads();  // the next coil's loads overwrite s
  }
  for (int i = l; i < S::TB * n; i += S::threads) {
    const int tb = i % S::TB, y = i / S::TB;
    if (x0 + tb < n) atomicAdd(&image[size_t(y) * n + x0 + tb].x, acc[i]);
  }
}

__global__ void take_sqrt(float2* __restrict__ image, long pixels) {
  const long p = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p < pixels) image[p] = make_float2(sqrtf(image[p].x), 0.f);
}

class FusedImageCuda final : public Stage {
 public:
  explicit FusedImageCuda(const GriddingParams& k) : k_(k) {}
  std::string name() const override { return "fft+deapodize+combine"; }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    check_fft_grids(input);
    const int G = oversampled_grid_size(g.matrix, k_.oversampling);
    if (int(input[1]) != G || input[0] != std::size_t(g.coils))
      throw ConfigError("fft+deapodize+combine: input " + input.str() + " is not the [coils][G][G] grid of " +
                        g.str());
    in_ext_ = input;
    G_ = G;
    n_ = g.matrix;
    coils_ = g.coils;
    int smem_cols = 0, tb = 1;
    const bool ok = dispatch_size(G_, [&]<int N>() {
      using C = ColShape<N>;
      smem_cols = C::smem + C::TB * n_ * int(sizeof(float));
      tb = C::TB;
      CUDA_CHECK(cudaFuncSetAttribute(cols_rss<N>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_cols));
    });
    if (!ok)
      throw ConfigError("fft: the custom engine supports grids of 64..2048 points (powers of two); matrix " +
                        std::to_string(n_) + " at oversampling " + std::to_string(k_.oversampling) +
                        " needs " + std::to_string(G_) + " (use fft: cufft)");
    smem_cols_ = smem_cols;
    // Enough blocks for a large GPU: split the coils into groups until there are ~2 blocks per SM.
    int sms = 0, dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    col_groups_ = (n_ + tb - 1) / tb;
    const int groups = std::clamp((2 * sms + col_groups_ - 1) / col_groups_, 1, coils_);
    coils_per_ = (coils_ + groups - 1) / groups;
    coil_groups_ = (coils_ + coils_per_ - 1) / coils_per_;

    const DeapodizeTable t = make_deapodize_table(n_, k_);
    src_ = DeviceBuffer<int>(Extents{t.src.size()});
    factor_ = DeviceBuffer<float>(Extents{t.factor.size()});
    gpu::copy_to_device(src_.data(), t.src.data(), t.src.size() * sizeof(int), ctx.stream);
    gpu::copy_to_device(factor_.data(), t.factor.data(), t.factor.size() * sizeof(float), ctx.stream);
    const auto tw = twiddle_table(G_);
    tw_ = DeviceBuffer<cfloat>(Extents{tw.size()});
    gpu::copy_to_device(tw_.data(), tw.data(), tw.size() * sizeof(float2), ctx.stream);
    mid_ = DeviceBuffer<cfloat>(Extents{std::size_t(coils_), std::size_t(G_), std::size_t(n_)});
    gpu::synchronize(ctx.stream);  // the host tables above are temporaries
    out_ext_ = Extents{std::size_t(n_), std::size_t(n_)};
    return out_ext_;
  }

  void process(const StageInput& in, View<cfloat> out, Context& ctx) override {
    expect_view("fft+deapodize+combine", "input", in.data, in_ext_, Location::Device);
    expect_view("fft+deapodize+combine", "output", out, out_ext_, Location::Device);
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    const auto* grid = reinterpret_cast<const float2*>(in.data.data);
    auto* image = reinterpret_cast<float2*>(out.data);
    auto* mid = reinterpret_cast<float2*>(mid_.data());
    const auto* tw = reinterpret_cast<const float2*>(tw_.data());
    CUDA_CHECK(cudaMemsetAsync(image, 0, out.size() * sizeof(cfloat), stream));
    dispatch_size(G_, [&]<int N>() {
      using R = RowShape<N>;
      using C = ColShape<N>;
      const long rows = long(coils_) * N;
      rows_crop<N><<<unsigned((rows + R::TB - 1) / R::TB), R::threads, R::smem, stream>>>(
          grid, rows, n_, src_.data(), factor_.data(), tw, mid);
      CUDA_CHECK_LAUNCH("rows_crop");
      cols_rss<N><<<dim3(unsigned(col_groups_), unsigned(coil_groups_)), C::threads, smem_cols_, stream>>>(
          mid, coils_, coils_per_, n_, src_.data(), factor_.data(), tw, image);
      CUDA_CHECK_LAUNCH("cols_rss");
    });
    const long pixels = long(n_) * n_;
    take_sqrt<<<unsigned((pixels + 255) / 256), 256, 0, stream>>>(image, pixels);
    CUDA_CHECK_LAUNCH("take_sqrt");
  }

 private:
  GriddingParams k_;
  Extents in_ext_, out_ext_;
  int G_ = 0, n_ = 0, coils_ = 0, coils_per_ = 1, coil_groups_ = 1, col_groups_ = 1, smem_cols_ = 0;
  DeviceBuffer<int> src_;
  DeviceBuffer<float> factor_;
  DeviceBuffer<cfloat> tw_, mid_;
};

}  // namespace

std::unique_ptr<Stage> make_fused_image_cuda(const GriddingParams& kernel) {
  return std::make_unique<FusedImageCuda>(kernel);
}

}  // namespace radstream
