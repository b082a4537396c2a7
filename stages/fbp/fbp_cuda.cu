// CUDA twins of the FBP stages: the filter writes the zero-padded, centred spectra in one pass; the 1D
// inverse FFTs run on cuFFT (one batched plan) or the custom engine; the backprojection gathers per pixel:
// one thread per pixel and coil loops over the spokes (their cos, sin and weight staged in shared memory)
// and interpolates the projection, with no atomics. The spoke angles and weights are computed on the GPU
// from the frame's trajectory (one block), so nothing waits for the host.
#include <cufft.h>

#include <string>

#include "core/math.hpp"
#include "fft/custom_fft.cuh"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "stages/fbp/fbp.hpp"

namespace radstream {
namespace {

// out[r][j] for j < P: the filtered spectrum of row r placed at its frequency, times (-1)^j.
__global__ void fbp_filter(const float2* __restrict__ in, long rows, int spokes, int S, int P, int filter,
                           float cutoff, const SpokeLine* __restrict__ lines, float2* __restrict__ out) {
  const long i = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * P) return;
  const long r = i / P;
  const int j = int(i % P);
  const int jj = j < P / 2 ? j : j - P;  // signed frequency index
  const int n = jj + S / 2;
  float2 v = make_float2(0.f, 0.f);
  if (n >= 0 && n < S) {
    const SpokeLine l = lines[r % spokes];
    const float2 x = in[r * S + n];
    const float f =
        fbp_filter_value(filter, cutoff, float(n - S / 2) * l.dk + l.kc, l.dk) * ((j & 1) ? -1.f : 1.f);
    v = make_float2(x.x * f, x.y * f);
  }
  out[i] = v;
}

// Per spoke, from the frame's lines (fitted once per frame by the chain, shares of angle included):
// (cos, sin) x P dk, the share of angle and the phase slope of the spoke's offset.
__global__ void csw_from_lines(const SpokeLine* __restrict__ lines, int spokes, int P,
                               float4* __restrict__ csw, float* __restrict__ phase) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= spokes) return;
  const SpokeLine l = lines[p];
  const float scale = float(P) * l.dk;
  csw[p] = make_float4(cosf(l.theta) * scale, sinf(l.theta) * scale, l.weight, 0.f);
  phase[p] = l.dk > 0 ? (2.f * kPiF) * l.kc / scale : 0.f;
}

// A block is T x T pixels x kSplit threads per pixel: thread (pixel, j) sums the spokes j, j + kSplit, ...
// for a group of CG coils (the spoke's position, interpolation weight and phase computed once for all of
// them); the kSplit partial sums of a pixel are added in shared memory. No atomics. A spoke's samples that a
// block reads span about T sqrt(2) P dk positions, so a larger tile reads each cache line for more pixels:
// T = 16 (1024 threads) halves the L2 traffic of T = 8 where the image has enough tiles to fill the GPU.
constexpr int kSplit = 4;

template <int CG, int T>
__global__ void __launch_bounds__(T* T* kSplit)
    backproject_kernel(const float2* __restrict__ q, int coils, int spokes, int P, int N,
                       const float4* __restrict__ csw, const float* __restrict__ phase,
                       float2* __restrict__ out) {
  constexpr int kPix = T * T, kBlock = kPix * kSplit;
  __shared__ float4 s_csw[kBlock];
  __shared__ float s_ph[kBlock];
  __shared__ float2 s_red[kSplit - 1][kPix][CG];
  const int pix = threadIdx.x % kPix, split = threadIdx.x / kPix;
  const int ix = blockIdx.x * T + pix % T, iy = blockIdx.y * T + pix / T;
  const int c0 = blockIdx.z * CG;
  const float x = float(ix - N / 2), y = float(iy - N / 2), half = 0.5f * float(P);
  const size_t coil_stride = size_t(spokes) * P;
  float2 acc[CG];
#pragma unroll
  for (int c = 0; c < CG; ++c) acc[c] = make_float2(0.f, 0.f);
  for (int p0 = 0; p0 < spokes; p0 += kBlock) {
    const int cnt = min(kBlock, spokes - p0);
    __syncthreads();
    if (int(threadIdx.x) < cnt) {
      s_csw[threadIdx.x] = csw[p0 + threadIdx.x];
      s_ph[threadIdx.x] = phase[p0 + threadIdx.x];
    }
    __syncthreads();
#pragma unroll 4
    for (int k = split; k < cnt; k += kSplit) {
      const float4 a = s_csw[k];
      const float u = x * a.x + y * a.y + half;
      const float fl = floorf(u);
      // Outside the projection: weight 0 at a clamped index (no branch, so the loads of several spokes can
      // be in flight together).
      const bool in = fl >= 0.f && fl < float(P - 1);
      const int m = in ? int(fl) : 0;
      const float f = u - fl, wt = in ? a.z : 0.f, w1 = wt * f, w0 = wt - w1;
      const float ph = s_ph[k];
      float sn = 0.f, cs = 1.f;
      // The spoke's offset from k = 0 (a fitted line's offset is rarely exactly 0, so this runs for nearly
      // every spoke): the fast intrinsic, |error| < 4e-7 for |argument| <= pi (an offset up to one sample);
      // sincosf's slow path made the backprojection 1.4x slower (R2-fbp backproject 0.185 -> 0.134 ms).
      if (ph != 0.f) __sincosf((u - half) * ph, &sn, &cs);
      const float2* qp = q + size_t(c0) * coil_stride + size_t(p0 + k) * P + m;
#pragma unroll
      for (int c = 0; c < CG; ++c) {
        if (c0 + c >= coils) break;
        const float2 v0 = __ldg(qp + c * coil_stride), v1 = __ldg(qp + c * coil_stride + 1);
        const float vx = w0 * v0.x + w1 * v1.x, vy = w0 * v0.y + w1 * v1.y;
        acc[c].x += vx * cs - vy * sn;
        acc[c].y += vx * sn + vy * cs;
      }
    }
  }
  if (split > 0)
#pragma unroll
    for (int c = 0; c < CG; ++c) s_red[split - 1][pix][c] = acc[c];
  __syncthreads();
  if (split == 0 && ix < N && iy < N) {
#pragma unroll
    for (int c = 0; c < CG; ++c) {
      if (c0 + c >= coils) break;
      float2 v = acc[c];
      for (int j = 0; j < kSplit - 1; ++j) {
        v.x += s_red[j][pix][c].x;
        v.y += s_red[j][pix][c].y;
      }
      out[(size_t(c0 + c) * N + iy) * N + ix] = v;
    }
  }
}

class FbpProjectCuda final : public Stage {
 public:
  FbpProjectCuda(const FbpParams& p, const FftParams& fft) : p_(p), custom_(fft.engine == FftEngine::Custom) {
    if (fft.engine == FftEngine::Fftw)
      throw ConfigError("fbp: FFT engine 'fftw' is the CPU engine; the CUDA backend uses cufft or custom");
  }
  ~FbpProjectCuda() override {
    if (plan_) cufftDestroy(plan_);
  }
  std::string name() const override { return "fbp_project"; }
  StageSpec spec() const override {
    StageSpec s;
    s.spoke_lines = true;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context& ctx) override {
    const Extents expect{std::size_t(g.coils), std::size_t(g.spokes), std::size_t(g.samples)};
    if (!(input == expect))
      throw ConfigError("fbp_project: input " + input.str() + " is not the frame's " + expect.str());
    in_ext_ = input;
    S_ = g.samples;
    P_ = fbp_fft_size(S_);
    rows_ = long(input[0] * input[1]);
    spokes_ = g.spokes;
    if (custom_) {
      if (!customfft::supported(P_))
        throw ConfigError("fbp: the custom FFT engine supports 64..2048 points; " + std::to_string(S_) +
                          " samples need " + std::to_string(P_) + " (use fft: cufft)");
      const auto tw = customfft::twiddle_table(P_);
      tw_ = DeviceBuffer<cfloat>(Extents{tw.size()});
      gpu::copy_to_device(tw_.data(), tw.data(), tw.size() * sizeof(cfloat), ctx.stream);
    } else {
      if (plan_) cufftDestroy(plan_);
      plan_ = 0;
      int n[1] = {P_};
      CUFFT_CHECK(cufftPlanMany(&plan_, 1, n, nullptr, 1, P_, nullptr, 1, P_, CUFFT_C2C, int(rows_)));
      CUFFT_CHECK(cufftSetStream(plan_, static_cast<cudaStream_t>(ctx.stream)));
    }
    gpu::synchronize(ctx.stream);
    out_ext_ = Extents{input[0], input[1], std::size_t(P_)};
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("fbp_project", "input", in, in_ext_, Location::Device);
    expect_view("fbp_project", "output", out, out_ext_, Location::Device);
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    auto* o = reinterpret_cast<float2*>(out.data);
    if (!frame.d_lines)
      throw InputError("fbp_project: the frame context carries no spoke lines on the device");
    const long total = rows_ * P_;
    fbp_filter<<<unsigned((total + 255) / 256), 256, 0, stream>>>(reinterpret_cast<const float2*>(in.data),
                                                                  rows_, spokes_, S_, P_, int(p_.filter),
                                                                  float(p_.cutoff), frame.d_lines, o);
    CUDA_CHECK_LAUNCH("fbp_filter");
    if (custom_)
      customfft::rows_1d(o, rows_, P_, true, reinterpret_cast<const float2*>(tw_.data()), stream);
    else
      CUFFT_CHECK(cufftExecC2C(plan_, reinterpret_cast<cufftComplex*>(o), reinterpret_cast<cufftComplex*>(o),
                               CUFFT_INVERSE));
  }

 private:
  FbpParams p_;
  bool custom_;
  Extents in_ext_, out_ext_;
  int S_ = 0, P_ = 0, spokes_ = 0;
  long rows_ = 0;
  DeviceBuffer<cfloat> tw_;
  cufftHandle plan_ = 0;
};

class BackprojectCuda final : public Stage {
 public:
  explicit BackprojectCuda(const FbpParams& p) : p_(p) {}
  std::string name() const override { return "backproject"; }
  StageSpec spec() const override {
    StageSpec s;
    s.spoke_lines = true;
    return s;
  }

  Extents configure(const Geometry& g, const Extents& input, Context&) override {
    const int P = fbp_fft_size(g.samples);
    const Extents expect{std::size_t(g.coils), std::size_t(g.spokes), std::size_t(P)};
    if (!(input == expect))
      throw ConfigError("backproject: input " + input.str() + " is not the projections " + expect.str());
    if (g.spokes > kMaxDeviceSpokes)
      throw ConfigError("backproject: more than " + std::to_string(kMaxDeviceSpokes) +
                        " spokes per frame on the GPU");
    g_ = g;
    in_ext_ = input;
    P_ = P;
    csw_ = DeviceBuffer<float4>(Extents{std::size_t(g.spokes)});
    phase_ = DeviceBuffer<float>(Extents{std::size_t(g.spokes)});
    out_ext_ = Extents{std::size_t(g.coils), std::size_t(g.matrix), std::size_t(g.matrix)};
    return out_ext_;
  }

  void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    expect_view("backproject", "input", in, in_ext_, Location::Device);
    expect_view("backproject", "output", out, out_ext_, Location::Device);
    if (!frame.d_lines)
      throw InputError("backproject: the frame context carries no spoke lines on the device");
    auto stream = static_cast<cudaStream_t>(ctx.stream);
    csw_from_lines<<<unsigned((g_.spokes + 255) / 256), 256, 0, stream>>>(frame.d_lines, g_.spokes, P_,
                                                                          csw_.data(), phase_.data());
    CUDA_CHECK_LAUNCH("csw_from_lines");
    const int N = g_.matrix, C = g_.coils;
    const int cg = C <= 1 ? 1 : C <= 2 ? 2 : C <= 4 ? 4 : 8;
    const auto* q = reinterpret_cast<const float2*>(in.data);
    auto* o = reinterpret_cast<float2*>(out.data);
    const int S = g_.spokes;
    // 16 x 16 tiles from 256^2 up (enough blocks for the GPU) for up to 4 coils a block (shared memory).
    const bool big = N >= 256 && cg <= 4;
    auto launch = [&](auto kernel, int T) {
      const dim3 grid(unsigned((N + T - 1) / T), unsigned((N + T - 1) / T), unsigned((C + cg - 1) / cg));
      kernel<<<grid, T * T * kSplit, 0, stream>>>(q, C, S, P_, N, csw_.data(), phase_.data(), o);
    };
    switch (cg) {
      case 1:
        big ? launch(backproject_kernel<1, 16>, 16) : launch(backproject_kernel<1, 8>, 8);
        break;
      case 2:
        big ? launch(backproject_kernel<2, 16>, 16) : launch(backproject_kernel<2, 8>, 8);
        break;
      case 4:
        big ? launch(backproject_kernel<4, 16>, 16) : launch(backproject_kernel<4, 8>, 8);
        break;
      default:
        launch(backproject_kernel<8, 8>, 8);
        break;
    }
    CUDA_CHECK_LAUNCH("backproject");
  }

 private:
  FbpParams p_;
  Geometry g_;
  Extents in_ext_, out_ext_;
  int P_ = 0;
  DeviceBuffer<float4> csw_;
  DeviceBuffer<float> phase_;
};

}  // namespace

std::unique_ptr<Stage> make_fbp_project_cuda(const FbpParams& p, const FftParams& fft) {
  return std::make_unique<FbpProjectCuda>(p, fft);
}

std::unique_ptr<Stage> make_backproject_cuda(const FbpParams& p) {
  return std::make_unique<BackprojectCuda>(p);
}

}  // namespace radstream
