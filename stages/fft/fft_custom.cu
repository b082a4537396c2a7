// The custom FFT engine as a stage: a batched 2D transform of [batch][G][G] grids, in place, as a pass of
// row transforms (one block per TB rows) and a pass of column transforms (one block per TB adjacent columns,
// so that every global load and store is a run of TB * 8 contiguous bytes). Same convention as cuFFT and
// FFTW: unnormalized, inverse = exp(+2 pi i ...). Sizes: powers of two 64..2048 (custom_fft.cuh).
#include <string>

#include "fft/custom_fft.cuh"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "stages/fft/fft.hpp"

namespace radstream {

namespace {

using namespace customfft;

template <int N, bool INV>
__global__ void __launch_bounds__(RowShape<N>::threads)
    fft_rows(float2* __restrict__ data, long transforms, const float2* __restrict__ tw) {
  using S = RowShape<N>;
  extern __shared__ float2 s[];
  const int l = threadIdx.x, tb = l / S::T;
  const long t = long(blockIdx.x) * S::TB + tb;
  const bool ok = t < transforms;
  float2* row = data + (ok ? t : 0) * N;
  fft_transform<N, S::E, INV, RowLayout>(
      s + tb * RowLayout::stride(N), l % S::T, tw, [&](int e) { return ok ? row[e] : make_float2(0.f, 0.f); },
      [&](int e, float2 v) {
        if (ok) row[e] = v;
      });
}

// blockIdx.x: group of TB columns; blockIdx.y: grid of the batch. Lane tb of each TB takes one column.
template <int N, bool INV>
__global__ void __launch_bounds__(ColShape<N>::threads)
    fft_cols(float2* __restrict__ data, const float2* __restrict__ tw) {
  using S = ColShape<N>;
  extern __shared__ float2 s[];
  const int l = threadIdx.x, tb = l % S::TB;
  float2* col = data + size_t(blockIdx.y) * N * N + blockIdx.x * S::TB + tb;
  fft_transform<N, S::E, INV, ColLayout<S::TB>>(
      s + tb, l / S::TB, tw, [&](int e) { return col[size_t(e) * N]; },
      [&](int e, float2 v) { col[size_t(e) * N] = v; });
}

}  // namespace

namespace customfft {

void rows_1d(float2* data, long transforms, int n, bool inverse, const float2* tw, cudaStream_t stream) {
  dispatch_size(n, [&]<int N>() {
    using R = RowShape<N>;
    const unsigned blocks = unsigned((transforms + R::TB - 1) / R::TB);
    if (inverse)
      fft_rows<N, true><<<blocks, R::threads, R::smem, stream>>>(data, transforms, tw);
    else
      fft_rows<N, false><<<blocks, R::threads, R::smem, stream>>>(data, transforms, tw);
    CUDA_CHECK_LAUNCH("fft_rows");
  });
}

}  // namespace customfft

namespace {

class FftCustom final : public Stage {
 public:
  explicit FftCustom(FftDirection dir) : inverse_(dir == FftDirection::Inverse) {}
  std::string name() const override { return inverse_ ? "fft" : "fft_forward"; }
  StageSpec spec() const override {
    StageSpec s;
    s.in_place = true;
    return s;
  }

  Extents configure(const Geometry&, const Extents& input, Context& ctx) override {
    check_fft_grids(input);
    ext_ = input;
    G_ = int(input[1]);
    const bool ok = dispatch_size(G_, [this]<int N>() {
      if (inverse_)
        set_smem(fft_cols<N, true>, ColShape<N>::smem);
      else
        set_smem(fft_cols<N, false>, ColShape<N>::smem);
    });
    if (!ok)
      throw ConfigError(
          "fft: the custom engine supports grids of 64, 128, 256, 512, 1024 or 2048 points; "
          "this geometry needs " +
          std::to_string(G_) + " (use fft: cufft, or an oversampling that gives a power of two)");
    const auto t = twiddle_table(G_);
    tw_ = DeviceBuffer<cfloat>(Extents{t.size()});
    gpu::copy_to_device(tw_.data(), t.data(), t.size() * sizeof(cfloat), ctx.stream);
    return input;
  }

  void process(const FrameContext&, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    prepare_fft_in_place(in, out, ext_, ctx);
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    auto* d = reinterpret_cast<float2*>(out.data);
    const auto* tw = reinterpret_cast<const float2*>(tw_.data());
    const long batch = long(ext_[0]);
    dispatch_size(G_, [&]<int N>() {
      using R = RowShape<N>;
      using C = ColShape<N>;
      const long rows = batch * N;
      const unsigned rb = unsigned((rows + R::TB - 1) / R::TB);
      const dim3 cb(unsigned(N / C::TB), unsigned(batch));
      if (inverse_) {
        fft_rows<N, true><<<rb, R::threads, R::smem, stream>>>(d, rows, tw);
        CUDA_CHECK_LAUNCH("fft_rows");
        fft_cols<N, true><<<cb, C::threads, C::smem, stream>>>(d, tw);
        CUDA_CHECK_LAUNCH("fft_cols");
      } else {
        fft_rows<N, false><<<rb, R::threads, R::smem, stream>>>(d, rows, tw);
        CUDA_CHECK_LAUNCH("fft_rows");
        fft_cols<N, false><<<cb, C::threads, C::smem, stream>>>(d, tw);
        CUDA_CHECK_LAUNCH("fft_cols");
      }
    });
  }

 private:
  template <class K>
  static void set_smem(K kernel, int bytes) {
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  }

  bool inverse_;
  Extents ext_;
  int G_ = 0;
  DeviceBuffer<cfloat> tw_;
};

}  // namespace

std::unique_ptr<Stage> make_fft_custom(FftDirection dir) {
  return std::make_unique<FftCustom>(dir);
}

}  // namespace radstream
