#include <complex>
#include <vector>

#include "gpu/cuda_check.cuh"
#include "nlinv/nlinv_model_cuda.hpp"

namespace radstream {

namespace {

constexpr int kThreads = 256;

unsigned blocks(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535u * 16 ? (b ? b : 1) : 65535u * 16);
}

#define GRID_STRIDE(i, n)                                                           \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); \
       i += std::size_t(gridDim.x) * blockDim.x)

__device__ inline bool in_mask(std::size_t p, int g, int lo, int n) {
  const int y = int(p / std::size_t(g)), x = int(p % std::size_t(g));
  return y >= lo && y < lo + n && x >= lo && x < lo + n;
}
__device__ inline float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ inline float2 cmulc(float2 a, float2 b) {  // conj(a) b
  return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}

// out[i] = in[i] * w[i % px] * s
__global__ void weight_scale(const float2* in, float2* out, const float* w, std::size_t px, std::size_t n,
                             float s) {
  GRID_STRIDE(i, n) {
    const float f = w[i % px] * s;
    out[i] = make_float2(in[i].x * f, in[i].y * f);
  }
}

// out[i] = M rho c_i
__global__ void masked_product(const float2* rho, const float2* c, float2* out, std::size_t px, std::size_t n,
                               int g, int lo, int nm) {
  GRID_STRIDE(i, n) {
    const std::size_t p = i % px;
    out[i] = in_mask(p, g, lo, nm) ? cmul(rho[p], c[i]) : make_float2(0.f, 0.f);
  }
}

// out[i] = in[i] d[i % px] s (in place when in == out)
__global__ void pattern_scale(const float2* in, float2* out, const float2* d, std::size_t px, std::size_t n,
                              float s) {
  GRID_STRIDE(i, n) {
    const float2 v = cmul(in[i], d[i % px]);
    out[i] = make_float2(v.x * s, v.y * s);
  }
}

// out[i] = M (drho c_i + rho out_i) s
__global__ void derivative_combine(const float2* drho, const float2* rho, const float2* c, float2* out,
                                   std::size_t px, std::size_t n, int g, int lo, int nm, float s) {
  GRID_STRIDE(i, n) {
    const std::size_t p = i % px;
    if (!in_mask(p, g, lo, nm)) {
      out[i] = make_float2(0.f, 0.f);
      continue;
    }
    const float2 a = cmul(drho[p], c[i]), b = cmul(rho[p], out[i]);
    out[i] = make_float2((a.x + b.x) * s, (a.y + b.y) * s);
  }
}

// Per pixel: drho = s sum_j conj(c_j) t_j; t_j <- conj(rho) s t_j (0 outside the mask).
__global__ void adjoint_combine(float2* drho, const float2* rho, const float2* c, float2* t, std::size_t px,
                                int coils, int g, int lo, int nm, float s) {
  GRID_STRIDE(p, px) {
    if (!in_mask(p, g, lo, nm)) {
      drho[p] = make_float2(0.f, 0.f);
      for (int j = 0; j < coils; ++j) t[std::size_t(j) * px + p] = make_float2(0.f, 0.f);
      continue;
    }
    float2 acc = make_float2(0.f, 0.f);
    const float2 r = make_float2(rho[p].x * s, -rho[p].y * s);
    for (int j = 0; j < coils; ++j) {
      const std::size_t i = std::size_t(j) * px + p;
      const float2 tj = t[i];
      const float2 a = cmulc(c[i], tj);
      acc.x += a.x;
      acc.y += a.y;
      t[i] = cmul(r, tj);
    }
    drho[p] = make_float2(acc.x * s, acc.y * s);
  }
}

// y <- x - y
__global__ void rsub_kernel(float2* y, const float2* x, std::size_t n) {
  GRID_STRIDE(i, n) y[i] = make_float2(x[i].x - y[i].x, x[i].y - y[i].y);
}

__global__ void scale_kernel(float2* d, std::size_t n, float s) {
  GRID_STRIDE(i, n) d[i] = make_float2(d[i].x * s, d[i].y * s);
}

// out[y][x] (N x N) = rho * sqrt(sum_j |c_j|^2) (combined) or rho at cell (y + lo, x + lo).
__global__ void image_kernel(const float2* rho, const float2* c, float2* out, int g, int lo, int nm,
                             int coils, std::size_t px, bool combined) {
  GRID_STRIDE(i, std::size_t(nm) * nm) {
    const int y = int(i / nm), x = int(i % nm);
    const std::size_t p = std::size_t(y + lo) * g + std::size_t(x + lo);
    float2 v = rho[p];
    if (combined) {
      float power = 0;
      for (int j = 0; j < coils; ++j) {
        const float2 cj = c[std::size_t(j) * px + p];
        power += cj.x * cj.x + cj.y * cj.y;
      }
      const float r = sqrtf(power);
      v = make_float2(v.x * r, v.y * r);
    }
    out[i] = v;
  }
}

// d[y][x] = psf[(y + G/2) % G][(x + G/2) % G]
__global__ void roll_kernel(const float2* psf, float2* d, int g) {
  GRID_STRIDE(i, std::size_t(g) * g) {
    const int y = int(i / g), x = int(i % g);
    d[i] = psf[std::size_t((y + g / 2) % g) * g + std::size_t((x + g / 2) % g)];
  }
}

// out[j][y][x] = c[j][y + lo][x + lo]
__global__ void crop_coils(const float2* c, float2* out, int g, int lo, int nm, int coils, std::size_t px) {
  GRID_STRIDE(i, std::size_t(coils) * nm * nm) {
    const int j = int(i / (std::size_t(nm) * nm));
    const std::size_t r = i % (std::size_t(nm) * nm);
    const int y = int(r / nm), x = int(r % nm);
    out[i] = c[std::size_t(j) * px + std::size_t(y + lo) * g + std::size_t(x + lo)];
  }
}

}  // namespace

NlinvModelCuda::NlinvModelCuda(int matrix, int grid, int coils, const NlinvParams& p, gpu::StreamRef stream)
    : NlinvModel(matrix, grid, coils), stream_(stream) {
  std::vector<float> w(px_);
  nlinv_sobolev_weight(g_, p, w.data());
  weight_ = DeviceBuffer<float>(Extents{px_});
  gpu::copy_to_device(weight_.data(), w.data(), px_ * sizeof(float), stream_);
  pattern_ = DeviceBuffer<cfloat>(Extents{px_});
  rho_ = DeviceBuffer<cfloat>(Extents{px_});
  coils_ = DeviceBuffer<cfloat>(Extents{px_ * j_});
  fft_j_ = CufftPlan({g_, g_}, j_, stream_);
  fft_1_ = CufftPlan({g_, g_}, 1, stream_);
  // The coil images are read at the mask's cells only; the fused linearization writes only those.
  gpu::memset_device(coils_.data(), 0, coils_.size() * sizeof(cfloat), stream_);
  if (p.fused && NlinvFusedCuda::supports(g_))
    fused_ = std::make_unique<NlinvFusedCuda>(n_, g_, j_, stream_);
  else
    work_ = DeviceBuffer<cfloat>(Extents{px_ * j_});  // cuFFT's normal operator's data-sized workspace
  gpu::synchronize(stream_);                          // the host weights leave scope
}

NlinvModelCuda::~NlinvModelCuda() = default;

void NlinvModelCuda::fft(cfloat* data, int batch, bool inverse) const {
  (batch == j_ ? fft_j_ : fft_1_).execute(data, inverse ? FftDirection::Inverse : FftDirection::Forward);
}

#define F2(p) reinterpret_cast<float2*>(p)
#define CF2(p) reinterpret_cast<const float2*>(p)

void NlinvModelCuda::linearize(const cfloat* x) {
  auto s = static_cast<cudaStream_t>(stream_);
  gpu::copy_device(rho_.data(), x, px_ * sizeof(cfloat), stream_);
  if (fused_) {
    fused_->linearize(weight_.data(), x, coils_.data());
    return;
  }
  const std::size_t n = px_ * j_;
  weight_scale<<<blocks(n), kThreads, 0, s>>>(CF2(x + px_), F2(coils_.data()), weight_.data(), px_, n,
                                              1.f / float(g_));
  CUDA_CHECK_LAUNCH("nlinv weight_scale");
  fft(coils_.data(), j_, true);
}

void NlinvModelCuda::value(cfloat* out) {
  auto s = static_cast<cudaStream_t>(stream_);
  const std::size_t n = px_ * j_;
  masked_product<<<blocks(n), kThreads, 0, s>>>(CF2(rho_.data()), CF2(coils_.data()), F2(out), px_, n, g_,
                                                lo_, n_);
  CUDA_CHECK_LAUNCH("nlinv masked_product");
  fft(out, j_, false);
  pattern_scale<<<blocks(n), kThreads, 0, s>>>(CF2(out), F2(out), CF2(pattern_.data()), px_, n,
                                               1.f / float(g_));
  CUDA_CHECK_LAUNCH("nlinv pattern_scale");
}

void NlinvModelCuda::derivative(const cfloat* v, cfloat* out) {
  auto s = static_cast<cudaStream_t>(stream_);
  const std::size_t n = px_ * j_;
  const float sc = 1.f / float(g_);
  weight_scale<<<blocks(n), kThreads, 0, s>>>(CF2(v + px_), F2(out), weight_.data(), px_, n, sc);
  CUDA_CHECK_LAUNCH("nlinv weight_scale");
  fft(out, j_, true);
  derivative_combine<<<blocks(n), kThreads, 0, s>>>(CF2(v), CF2(rho_.data()), CF2(coils_.data()), F2(out),
                                                    px_, n, g_, lo_, n_, sc);
  CUDA_CHECK_LAUNCH("nlinv derivative_combine");
  fft(out, j_, false);
}

void NlinvModelCuda::gradient(const cfloat* y, cfloat* r, cfloat* b) {
  if (fused_) {
    fused_->gradient(point(), y, r, b);
    return;
  }
  value(r);
  const std::size_t n = px_ * j_;
  rsub_kernel<<<blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream_)>>>(F2(r), CF2(y), n);
  CUDA_CHECK_LAUNCH("nlinv rsub");
  derivative_adjoint(r, b);
}

void NlinvModelCuda::derivative_adjoint(const cfloat* r, cfloat* out) {
  gpu::copy_device(out + px_, r, px_ * j_ * sizeof(cfloat), stream_);
  adjoint_in_place(out);
}

void NlinvModelCuda::adjoint_in_place(cfloat* out) {
  auto s = static_cast<cudaStream_t>(stream_);
  const std::size_t n = px_ * j_;
  const float sc = 1.f / float(g_);
  cfloat* t = out + px_;
  fft(t, j_, true);
  adjoint_combine<<<blocks(px_), kThreads, 0, s>>>(F2(out), CF2(rho_.data()), CF2(coils_.data()), F2(t), px_,
                                                   j_, g_, lo_, n_, sc);
  CUDA_CHECK_LAUNCH("nlinv adjoint_combine");
  fft(t, j_, false);
  weight_scale<<<blocks(n), kThreads, 0, s>>>(CF2(t), F2(t), weight_.data(), px_, n, sc);
  CUDA_CHECK_LAUNCH("nlinv weight_scale");
}

void NlinvModelCuda::normal(const cfloat* v, cfloat* out) {
  if (fused_) {
    fused_->normal(point(), v, out);
    return;
  }
  auto s = static_cast<cudaStream_t>(stream_);
  const std::size_t n = px_ * j_;
  derivative(v, work_.data());
  // D DG v straight into the coil part of out, where DG^H works in place (no copy of the data-sized array)
  pattern_scale<<<blocks(n), kThreads, 0, s>>>(CF2(work_.data()), F2(out + px_), CF2(pattern_.data()), px_, n,
                                               1.f);
  CUDA_CHECK_LAUNCH("nlinv pattern_scale");
  adjoint_in_place(out);
}

void NlinvModelCuda::image(NlinvOutput output, cfloat* out) {
  auto s = static_cast<cudaStream_t>(stream_);
  image_kernel<<<blocks(std::size_t(n_) * n_), kThreads, 0, s>>>(
      CF2(rho_.data()), CF2(coils_.data()), F2(out), g_, lo_, n_, j_, px_, output == NlinvOutput::Combined);
  CUDA_CHECK_LAUNCH("nlinv image");
}

void NlinvModelCuda::unitary(cfloat* data, int batch, bool inverse) {
  fft(data, batch, inverse);
  scale(data, px_ * std::size_t(batch), 1.f / float(g_));
}

void NlinvModelCuda::scale(cfloat* data, std::size_t n, float sc) {
  auto s = static_cast<cudaStream_t>(stream_);
  scale_kernel<<<blocks(n), kThreads, 0, s>>>(F2(data), n, sc);
  CUDA_CHECK_LAUNCH("nlinv scale");
}

void NlinvModelCuda::coil_maps(cfloat* out) {
  auto s = static_cast<cudaStream_t>(stream_);
  const std::size_t n = std::size_t(j_) * n_ * n_;
  crop_coils<<<blocks(n), kThreads, 0, s>>>(CF2(coils_.data()), F2(out), g_, lo_, n_, j_, px_);
  CUDA_CHECK_LAUNCH("nlinv crop_coils");
}

void NlinvModelCuda::pattern_from_psf(const cfloat* psf, float sc) {
  auto s = static_cast<cudaStream_t>(stream_);
  roll_kernel<<<blocks(px_), kThreads, 0, s>>>(CF2(psf), F2(pattern_.data()), g_);
  CUDA_CHECK_LAUNCH("nlinv roll");
  fft(pattern_.data(), 1, false);
  scale(pattern_.data(), px_, sc);
}

}  // namespace radstream
