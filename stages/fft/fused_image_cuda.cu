// The fused tail of the gridding chain on the custom FFT engine: [coils][G][G] oversampled grids ->
// [N][N] root-sum-of-squares image ([images][N][N] when the geometry holds several), in two kernels instead
// of inverse FFT + deapodize/crop + RSS.
//  1. rows: each row's inverse transform is computed in shared memory and only the N columns that survive
//     the crop are stored, already multiplied by the x half of the deapodization (which carries the
//     (-1)^x checkerboard that undoes the fftshift): [coils][G][N], half the bytes of the grid at sigma 2;
//  2. columns: a block takes TB image columns of a group of coils; each coil's column transforms are
//     computed in shared memory, the N surviving rows are multiplied by the y half of the deapodization and
//     their |.|^2 summed over the group in shared memory, then added to the image (one atomic per pixel and
//     group); a last tiny kernel takes the square root. The rows kernel clears the image on its way.
// The coil images are never written, which is what makes it faster; fft_fused: false keeps them.
#include <algorithm>
#include <string>

#include "fft/custom_fft.cuh"
#include "gpu/cuda_check.cuh"
#include "gpu/dependent_launch.cuh"
#include "gpu/device_memory.hpp"
#include "noncart/kaiser_bessel.hpp"
#include "noncart/nufft_kernel.hpp"
#include "stages/fft/fft.hpp"

namespace radstream {
namespace {

using namespace customfft;

// blockIdx.x: a coil; blockIdx.y: TB rows of it, counted from the bottom (the launch covers the rows exactly,
// G % TB == 0). Coil fastest in launch order, bottom rows first: the spread's last blocks wrote the bottom
// rows of every coil (its chunks go tile row by tile row), which are then still in L2. out: [coils][G][n].
// At E 8, six blocks an SM (40 registers; 8 bytes of spill at G 512). NC: the matrix when it is G / 2 (then
// which outputs the crop keeps is known at compile time: the last pass computes and stores only those), else
// 0 (the matrix is n).
template <int G, int NC>
__global__ void __launch_bounds__(RowShape<G>::threads, RowShape<G>::E == 8 ? 6 : 1)
    rows_crop(const float2* __restrict__ grid, int n_arg, const float* __restrict__ factor,
              const float2* __restrict__ tw, float2* __restrict__ out, float2* __restrict__ image,
              long pixels) {
  using S = RowShape<G>;
  extern __shared__ float2 s[];
  const int n = NC ? NC : n_arg;
  gpu::wait_for_previous();  // launched dependent: the grid (and the image, read by the frame before)
  gpu::allow_dependents();
  const int l = threadIdx.x, tb = l / S::T;
  const long blocks = long(gridDim.x) * gridDim.y, b = long(blockIdx.y) * gridDim.x + blockIdx.x;
  for (long p = b * S::threads + l; p < pixels; p += blocks * S::threads)
    image[p] = make_float2(0.f, 0.f);  // cols_rss adds into it (this saves a memset launch)
  const std::size_t t = std::size_t(blockIdx.x) * G + (G - 1 - (int(blockIdx.y) * S::TB + tb));
  const float2* row = grid + t * G;
  float2* dst = out + t * n;
  fft_transform<G, S::E, true, RowLayout>(
      s + tb * RowLayout::stride(G), l % S::T, tw, [&](int e) { return row[e]; },
      [&](int e, float2 v) {
        const int x = image_index(e, G, n);
        if (x >= 0) {
          const float f = factor[x];
          dst[x] = make_float2(v.x * f, v.y * f);
        }
      });
}

// The columns kernel's shape: as the engine's ColShape, but 512-point columns at 8 elements a thread and 8
// columns a block (62 registers), so that two blocks share an SM and one's loads overlap the other's passes
// (at 16 elements a thread, ~110 registers, one block an SM alternated between loading and computing); 256
// points keep ColShape's 16 columns, now also held to two blocks an SM.
template <int N>
struct RssShape : ColShapeOf<N, N >= 1024 ? 16 : 8, N >= 512 ? 8 : 16> {
  static constexpr int min_blocks = RssShape::E == 8 && RssShape::threads >= 512 ? 2 : 1;
};

// blockIdx.x: TB image columns; blockIdx.y: a group of coils_per coils of one image (groups of `groups`
// per image, each image's coils, coils_per_image of them, in a block of mid). mid: [coils][G][n]; image:
// [images][n][n] (sum of squares accumulated in the real part). NC as rows_crop's.
template <int G, int NC>
__global__ void __launch_bounds__(RssShape<G>::threads, RssShape<G>::min_blocks)
    cols_rss(const float2* __restrict__ mid, int coils_per_image, int coils_per, int groups, int n_arg,
             const float* __restrict__ factor, const float2* __restrict__ tw, float2* __restrict__ image) {
  using S = RssShape<G>;
  const int n = NC ? NC : n_arg;
  extern __shared__ float2 s[];
  float* acc = reinterpret_cast<float*>(s + S::TB * G);  // [n][TB], each element owned by one thread
  const int l = threadIdx.x, tb = l % S::TB;
  const int x = blockIdx.x * S::TB + tb;
  const bool ok = x < n;
  const int img = blockIdx.y / groups, c0 = img * coils_per_image;
  const int c_first = c0 + (blockIdx.y % groups) * coils_per,
            c_last = min(c0 + coils_per_image, c_first + coils_per);
  image += size_t(img) * n * n;
  for (int i = l; i < S::TB * n; i += S::threads) acc[i] = 0.f;
  gpu::wait_for_previous();  // launched dependent: rows_crop's middle and cleared image
  gpu::allow_dependents();
  __syncthreads();
  for (int c = c_first; c < c_last; ++c) {
    const float2* col = mid + size_t(c) * G * n + (ok ? x : 0);
    fft_transform<G, S::E, true, ColLayout<S::TB>>(
        s + tb, l / S::TB, tw, [&](int e) { return ok ? col[size_t(e) * n] : make_float2(0.f, 0.f); },
        [&](int e, float2 v) {
          const int y = image_index(e, G, n);
          if (y >= 0) {
            const float f = factor[y];
            acc[y * S::TB + tb] += (v.x * v.x + v.y * v.y) * (f * f);
          }
        });
  }
  __syncthreads();
  const int x0 = blockIdx.x * S::TB;
  for (int i = l; i < S::TB * n; i += S::threads) {
    const int t = i % S::TB, y = i / S::TB;
    if (x0 + t < n) atomicAdd(&image[size_t(y) * n + x0 + t].x, acc[i]);
  }
}

// Calls f.template operator()<NC>() with NC = n when the matrix n is half the grid N (sigma 2, the usual
// case: the kernels' crop then known at compile time), else NC = 0.
template <int N, class F>
void with_crop(int n, F&& f) {
  if (2 * n == N)
    f.template operator()<N / 2>();
  else
    f.template operator()<0>();
}

// The root of the sums of squares, and the image's finite check (StageSpec::counts_non_finite) in the same
// pass.
__global__ void take_sqrt(float2* __restrict__ image, long pixels, unsigned* bad) {
  gpu::wait_for_previous();
  gpu::allow_dependents();
  const long p = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pixels) return;
  const float v = sqrtf(image[p].x);
  image[p] = make_float2(v, 0.f);
  if (bad && !isfinite(v)) atomicAdd(bad, 1u);
}

class FusedImageCuda final : public Stage {
 public:
  explicit FusedImageCuda(const NufftKernel& k) : k_(k) {}
  std::string name() const override { return "fft_deapodize_combine"; }
  StageSpec spec() const override {
    StageSpec s;
    s.counts_non_finite = true;
    return s;
  }

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
    images_ = g.images;
    int smem_cols = 0, tb = 1, optin = 0, device = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const bool ok = dispatch_size(G_, [&]<int N>() {
      using C = RssShape<N>;
      smem_cols = C::smem + C::TB * n_ * int(sizeof(float));
      tb = C::TB;
      // The limit is the kernel's for the whole process: what the largest matrix on this grid asks (n <= N,
      // as far as the GPU allows), so that a smaller geometry configured later cannot lower it under a larger
      // one's launches.
      const int cols_limit = std::max(smem_cols, std::min(optin, C::smem + C::TB * N * int(sizeof(float))));
      with_crop<N>(n_, [&]<int NC>() {
        CUDA_CHECK(cudaFuncSetAttribute(rows_crop<N, NC>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        RowShape<N>::smem));
        CUDA_CHECK(
            cudaFuncSetAttribute(cols_rss<N, NC>, cudaFuncAttributeMaxDynamicSharedMemorySize, cols_limit));
      });
    });
    if (!ok)
      throw ConfigError("fft: the custom engine supports grids of 64..2048 points (powers of two); matrix " +
                        std::to_string(n_) + " at oversampling " + std::to_string(k_.oversampling) +
                        " needs " + std::to_string(G_) + " (use fft: cufft)");
    smem_cols_ = smem_cols;
    // Enough blocks for a large GPU: split each image's coils into groups until there are ~4 blocks per SM
    // (a group never spans two images: each image's sums go to its own plane).
    int sms = 0, dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    col_groups_ = (n_ + tb - 1) / tb;
    const int per_image = g.coils_per_image();
    const int groups =
        std::clamp((4 * sms + col_groups_ * images_ - 1) / (col_groups_ * images_), 1, per_image);
    coils_per_ = (per_image + groups - 1) / groups;
    coil_groups_ = (per_image + coils_per_ - 1) / coils_per_;  // per image

    const KaiserBesselLut lut(k_.width, k_.oversampling, k_.lut_resolution);
    const AxisApodization t = make_axis_apodization(n_, oversampled_grid_size(n_, k_.oversampling), lut);
    factor_ = DeviceBuffer<float>(Extents{t.factor.size()});
    gpu::copy_to_device(factor_.data(), t.factor.data(), t.factor.size() * sizeof(float), ctx.stream);
    const auto tw = twiddle_table(G_);
    tw_ = DeviceBuffer<cfloat>(Extents{tw.size()});
    gpu::copy_to_device(tw_.data(), tw.data(), tw.size() * sizeof(cfloat), ctx.stream);
    mid_ = DeviceBuffer<cfloat>(Extents{std::size_t(coils_), std::size_t(G_), std::size_t(n_)});
    gpu::synchronize(ctx.stream);  // the host tables above are temporaries
    out_ext_ = images_ == 1 ? Extents{std::size_t(n_), std::size_t(n_)}
                            : Extents{std::size_t(images_), std::size_t(n_), std::size_t(n_)};
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("fft+deapodize+combine", "input", in, in_ext_, Location::Device);
    expect_view("fft+deapodize+combine", "output", out, out_ext_, Location::Device);
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    const auto* grid = reinterpret_cast<const float2*>(in.data);
    auto* image = reinterpret_cast<float2*>(out.data);
    auto* mid = reinterpret_cast<float2*>(mid_.data());
    const auto* tw = reinterpret_cast<const float2*>(tw_.data());
    const long pixels = long(images_) * n_ * n_;
    dispatch_size(G_, [&]<int N>() {
      using R = RowShape<N>;
      using C = RssShape<N>;
      static_assert(N % R::TB == 0, "rows_crop's launch covers the rows exactly");
      with_crop<N>(n_, [&]<int NC>() {
        gpu::launch_dependent("rows_crop", rows_crop<N, NC>, dim3(unsigned(coils_), unsigned(N / R::TB)),
                              R::threads, R::smem, stream, grid, n_,
                              static_cast<const float*>(factor_.data()), tw, mid, image, pixels);
        gpu::launch_dependent(
            "cols_rss", cols_rss<N, NC>, dim3(unsigned(col_groups_), unsigned(coil_groups_ * images_)),
            C::threads, std::size_t(smem_cols_), stream, static_cast<const float2*>(mid), coils_ / images_,
            coils_per_, coil_groups_, n_, static_cast<const float*>(factor_.data()), tw, image);
      });
    });
    gpu::launch_dependent("take_sqrt", take_sqrt, unsigned((pixels + 255) / 256), 256, 0, stream, image,
                          pixels, frame.d_non_finite);
  }

 private:
  NufftKernel k_;
  Extents in_ext_, out_ext_;
  int G_ = 0, n_ = 0, coils_ = 0, images_ = 1, coils_per_ = 1, coil_groups_ = 1, col_groups_ = 1,
      smem_cols_ = 0;
  DeviceBuffer<float> factor_;
  DeviceBuffer<cfloat> tw_, mid_;
};

}  // namespace

std::unique_ptr<Stage> make_fused_image_cuda(const NufftKernel& kernel) {
  return std::make_unique<FusedImageCuda>(kernel);
}

}  // namespace radstream
