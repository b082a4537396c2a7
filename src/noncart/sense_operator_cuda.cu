#include <type_traits>

#include "fft/toeplitz_kernel.hpp"
#include "gpu/cuda_check.cuh"
#include "noncart/conj_product.cuh"
#include "noncart/sense_operator_cuda.hpp"

namespace radstream {
namespace {

constexpr int kThreads = 256;

using conjprod::add_conj_product;
using conjprod::cmul;

// Channel c = g coils + k sees image g. img[c][p] = maps[c][p] x[g][p]
__global__ void expand(const float2* __restrict__ maps, const float2* __restrict__ x, std::size_t pixels,
                       int coils, float2* __restrict__ img) {
  const std::size_t p = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t c = blockIdx.y;
  if (p < pixels) img[c * pixels + p] = cmul(maps[c * pixels + p], x[(c / coils) * pixels + p]);
}

// x[g][p] = sum_k conj(maps[g coils + k][p]) img[g coils + k][p] (blockIdx.y: g)
template <class T2>
__global__ void combine(const float2* __restrict__ maps, const float2* __restrict__ img, std::size_t pixels,
                        int coils, T2* __restrict__ x) {
  const std::size_t p = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (p >= pixels) return;
  const std::size_t g = blockIdx.y, c0 = g * coils;
  T2 s{};
  for (int c = 0; c < coils; ++c)
    add_conj_product(s, maps[(c0 + c) * pixels + p], img[(c0 + c) * pixels + p]);
  x[g * pixels + p] = s;
}

__global__ void round_to_float(const double2* __restrict__ in, std::size_t n, float2* __restrict__ out) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = make_float2(float(in[i].x), float(in[i].y));
}

// out[c][j] = in[c][j] w[j]
__global__ void weigh(const float2* __restrict__ in, const float* __restrict__ w, std::size_t n,
                      float2* __restrict__ out) {
  const std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t c = blockIdx.y;
  if (j < n) {
    const float2 v = in[c * n + j];
    out[c * n + j] = make_float2(v.x * w[j], v.y * w[j]);
  }
}

// sqrt_w[j] = sqrt(w[j]), psf_w[j] = w[j] (w = nullptr: ones); bad weights (negative, not finite) count as 0.
__global__ void prepare_weights(const float* __restrict__ w, std::size_t n, float* __restrict__ sqrt_w,
                                float2* __restrict__ psf_w) {
  const std::size_t j = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  if (j >= n) return;
  float v = w ? w[j] : 1.f;
  if (!(v >= 0.f) || !isfinite(v)) v = 0.f;
  sqrt_w[j] = sqrtf(v);
  psf_w[j] = make_float2(v, 0.f);
}

__global__ void sum_weights(const float2* __restrict__ w, std::size_t n, double* out) {
  __shared__ double part[kThreads];
  double s = 0;
  for (std::size_t j = threadIdx.x; j < n; j += kThreads) s += w[j].x;
  part[threadIdx.x] = s;
  __syncthreads();
  for (int d = kThreads / 2; d > 0; d /= 2) {
    if (threadIdx.x < d) part[threadIdx.x] += part[threadIdx.x + d];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = part[0];
}

// grids[c][y][x] = maps[c][y][x] x[g][y][x] on [0, N)^2 of each 2N grid, c = g coils + k (the rest of the
// grid stays 0: it is cleared once and the FFT that reads it writes elsewhere).
__global__ void pad_expand(const float2* __restrict__ maps, const float2* __restrict__ img, int N, int coils,
                           float2* __restrict__ grids) {
  const int M = 2 * N;
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  const std::size_t c = blockIdx.z, pixels = std::size_t(N) * N;
  if (x >= N) return;
  const std::size_t p = std::size_t(y) * N + x;
  grids[(c * M + y) * M + x] = cmul(maps[c * pixels + p], img[(c / coils) * pixels + p]);
}

// The PSF kernel is real (T(-d) = conj T(d) for real weights): grids *= kernel.
__global__ void multiply_kernel(float2* __restrict__ grids, const float* __restrict__ kernel,
                                std::size_t cells) {
  const std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x;
  const std::size_t c = blockIdx.y;
  if (i >= cells) return;
  const float k = kernel[i];
  const float2 v = grids[c * cells + i];
  grids[c * cells + i] = make_float2(v.x * k, v.y * k);
}

// z[g][y][x] = sum_k conj(maps[c][y][x]) grids[c][y][x], c = g coils + k, over the top-left N x N of each 2N
// grid (blockIdx.z: g).
template <class T2>
__global__ void crop_combine(const float2* __restrict__ maps, const float2* __restrict__ grids, int N,
                             int coils, T2* __restrict__ z) {
  const int M = 2 * N;
  const int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x >= N) return;
  const std::size_t p = std::size_t(y) * N + x, pixels = std::size_t(N) * N, g = blockIdx.z;
  T2 s{};
  for (std::size_t c = g * coils; c < (g + 1) * coils; ++c)
    add_conj_product(s, maps[c * pixels + p], grids[(c * M + y) * M + x]);
  z[g * pixels + p] = s;
}

unsigned blocks(std::size_t n) {
  return unsigned((n + kThreads - 1) / kThreads);
}

}  // namespace

SenseOperatorCuda::SenseOperatorCuda(int matrix, int coils, std::size_t points, const NufftKernel& kernel,
                                     bool toeplitz, gpu::StreamRef stream, int images)
    : LinearOperator(sense_image_extents(matrix, images), Extents{sense_channels(coils, images), points},
                     Location::Device),
      N_(matrix),
      coils_(coils),
      images_(images),
      channels_(int(sense_channels(coils, images))),
      points_(points),
      pixels_(std::size_t(matrix) * matrix),
      toeplitz_(toeplitz),
      stream_(stream),
      nufft_(matrix, channels_, points, kernel, stream) {
  const std::size_t channels = std::size_t(channels_);
  sqrt_w_ = DeviceBuffer<float>(Extents{points});
  weight_sum_ = DeviceBuffer<double>(Extents{1});
  coil_images_ = DeviceBuffer<cfloat>(Extents{channels, pixels_});
  samples_ = DeviceBuffer<cfloat>(Extents{channels, points});
  psf_w_ = DeviceBuffer<cfloat>(Extents{points});
  if (!toeplitz) direct_ = DeviceBuffer<cfloat>(Extents{channels, points});
  if (toeplitz) {
    const int M = 2 * matrix;
    psf_nufft_ = std::make_unique<NufftOperatorCuda>(M, 1, points, kernel, stream);
    psf_fft_ = CufftPlan({M, M}, 1, stream);
    kernel_ = DeviceBuffer<cfloat>(Extents{std::size_t(M), std::size_t(M)});
    kernel_re_ = DeviceBuffer<float>(Extents{std::size_t(M), std::size_t(M)});
    psf_t_ = DeviceBuffer<cfloat>(Extents{std::size_t(M), std::size_t(M)});
    if (ToeplitzFftCuda::supports(matrix))
      custom_ = std::make_unique<ToeplitzFftCuda>(matrix, coils, stream, images);
    set_cufft_toeplitz(false);
  }
  gpu::synchronize(stream);
}

void SenseOperatorCuda::set_cufft_toeplitz(bool on) {
  cufft_toeplitz_ = on || !custom_;
  if (!toeplitz_ || !cufft_toeplitz_ || padded_.data()) return;
  const int M = 2 * N_;
  fft2_ = CufftPlan({M, M}, channels_, stream_);
  grids2_ = DeviceBuffer<cfloat>(Extents{std::size_t(channels_), std::size_t(M), std::size_t(M)});
  padded_ = DeviceBuffer<cfloat>(Extents{std::size_t(channels_), std::size_t(M), std::size_t(M)});
  gpu::memset_device(padded_.data(), 0, padded_.size() * sizeof(cfloat), stream_);
}

SenseOperatorCuda::~SenseOperatorCuda() = default;

void SenseOperatorCuda::set_maps(const cfloat* d_maps) {
  maps_ = d_maps;
}

void SenseOperatorCuda::check_ready() const {
  if (!maps_) throw InputError("sense: set_maps() has not been called");
  if (!points_set_) throw InputError("sense: set_points() has not been called");
}

void SenseOperatorCuda::set_points(const float* d_traj, const float* d_weights) {
  auto s = static_cast<cudaStream_t>(stream_);
  nufft_.set_points(d_traj);
  weighted_ = d_weights != nullptr;
  prepare_weights<<<blocks(points_), kThreads, 0, s>>>(d_weights, points_, sqrt_w_.data(),
                                                       reinterpret_cast<float2*>(psf_w_.data()));
  CUDA_CHECK_LAUNCH("prepare_weights");
  if (weighted_) {
    sum_weights<<<1, kThreads, 0, s>>>(reinterpret_cast<const float2*>(psf_w_.data()), points_,
                                       weight_sum_.data());
    CUDA_CHECK_LAUNCH("sum_weights");
  }
  points_set_ = true;
  if (!toeplitz_) return;
  psf_nufft_->set_points(d_traj);
  psf_nufft_->adjoint(psf_w_.data(), psf_t_.data());
  toeplitz_kernel_cuda(psf_t_.data(), N_, kernel_.data(), psf_fft_, kernel_re_.data(), stream_);
}

double SenseOperatorCuda::weight_sum() {
  if (!weighted_) return double(points_);
  double v = 0;
  gpu::copy_to_host(&v, weight_sum_.data(), sizeof(double), stream_);
  gpu::synchronize(stream_);
  return v;
}

void SenseOperatorCuda::forward(const cfloat* d_x, cfloat* d_y) {
  check_ready();
  auto s = static_cast<cudaStream_t>(stream_);
  expand<<<dim3(blocks(pixels_), unsigned(channels_)), kThreads, 0, s>>>(
      reinterpret_cast<const float2*>(maps_), reinterpret_cast<const float2*>(d_x), pixels_, coils_,
      reinterpret_cast<float2*>(coil_images_.data()));
  CUDA_CHECK_LAUNCH("sense expand");
  nufft_.forward(coil_images_.data(), d_y);
  if (weighted_) {
    weigh<<<dim3(blocks(points_), unsigned(channels_)), kThreads, 0, s>>>(
        reinterpret_cast<const float2*>(d_y), sqrt_w_.data(), points_, reinterpret_cast<float2*>(d_y));
    CUDA_CHECK_LAUNCH("sense weigh");
  }
}

template <class T2>
void SenseOperatorCuda::adjoint_into(const cfloat* d_y, T2* d_x) {
  check_ready();
  auto s = static_cast<cudaStream_t>(stream_);
  const cfloat* in = d_y;
  if (weighted_) {
    weigh<<<dim3(blocks(points_), unsigned(channels_)), kThreads, 0, s>>>(
        reinterpret_cast<const float2*>(d_y), sqrt_w_.data(), points_,
        reinterpret_cast<float2*>(samples_.data()));
    CUDA_CHECK_LAUNCH("sense weigh");
    in = samples_.data();
  }
  nufft_.adjoint(in, coil_images_.data());
  combine<<<dim3(blocks(pixels_), unsigned(images_)), kThreads, 0, s>>>(
      reinterpret_cast<const float2*>(maps_), reinterpret_cast<const float2*>(coil_images_.data()), pixels_,
      coils_, d_x);
  CUDA_CHECK_LAUNCH("sense combine");
}

template <class T2>
void SenseOperatorCuda::toeplitz_into(const cfloat* d_x, T2* d_z) {
  check_ready();
  if (!cufft_toeplitz_) {
    if constexpr (std::is_same_v<T2, double2>)
      custom_->apply(maps_, d_x, kernel_re_.data(), reinterpret_cast<std::complex<double>*>(d_z));
    else
      custom_->apply(maps_, d_x, kernel_re_.data(), reinterpret_cast<cfloat*>(d_z));
    return;
  }
  auto s = static_cast<cudaStream_t>(stream_);
  const int M = 2 * N_;
  const std::size_t cells = std::size_t(M) * M;
  pad_expand<<<dim3(blocks(N_), unsigned(N_), unsigned(channels_)), kThreads, 0, s>>>(
      reinterpret_cast<const float2*>(maps_), reinterpret_cast<const float2*>(d_x), N_, coils_,
      reinterpret_cast<float2*>(padded_.data()));
  CUDA_CHECK_LAUNCH("toeplitz pad_expand");
  fft2_.execute(padded_.data(), grids2_.data(), FftDirection::Forward);
  multiply_kernel<<<dim3(blocks(cells), unsigned(channels_)), kThreads, 0, s>>>(
      reinterpret_cast<float2*>(grids2_.data()), kernel_re_.data(), cells);
  CUDA_CHECK_LAUNCH("toeplitz multiply");
  fft2_.execute(grids2_.data(), FftDirection::Inverse);
  crop_combine<<<dim3(blocks(N_), unsigned(N_), unsigned(images_)), kThreads, 0, s>>>(
      reinterpret_cast<const float2*>(maps_), reinterpret_cast<const float2*>(grids2_.data()), N_, coils_,
      d_z);
  CUDA_CHECK_LAUNCH("toeplitz crop_combine");
}

void SenseOperatorCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  adjoint_into(d_y, reinterpret_cast<float2*>(d_x));
}

void SenseOperatorCuda::normal(const cfloat* d_x, cfloat* d_z) {
  if (!toeplitz_) return normal_direct(d_x, d_z);
  toeplitz_into(d_x, reinterpret_cast<float2*>(d_z));
}

void SenseOperatorCuda::adjoint_sum(const cfloat* d_y, std::complex<double>* d_x) {
  adjoint_into(d_y, reinterpret_cast<double2*>(d_x));
}

void SenseOperatorCuda::normal_sum(const cfloat* d_x, std::complex<double>* d_z) {
  if (toeplitz_) return toeplitz_into(d_x, reinterpret_cast<double2*>(d_z));
  forward(d_x, direct_.data());
  adjoint_into(direct_.data(), reinterpret_cast<double2*>(d_z));
}

void SenseOperatorCuda::round_sum(const std::complex<double>* d_sum, cfloat* d_out) {
  const std::size_t n = pixels_ * std::size_t(images_);
  round_to_float<<<blocks(n), kThreads, 0, static_cast<cudaStream_t>(stream_)>>>(
      reinterpret_cast<const double2*>(d_sum), n, reinterpret_cast<float2*>(d_out));
  CUDA_CHECK_LAUNCH("sense round_sum");
}

void SenseOperatorCuda::set_deterministic(bool on) {
  nufft_.plan().set_deterministic(on, channels_);
  if (psf_nufft_) psf_nufft_->plan().set_deterministic(on, 1);
}

}  // namespace radstream
