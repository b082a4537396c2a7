#include <cuda_runtime.h>

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "nlinv/coil_compressor.hpp"

namespace radstream {

namespace {

constexpr int kThreads = 256;

unsigned blocks(std::size_t n) {
  const std::size_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 65535u * 16 ? (b ? b : 1) : 65535u * 16);
}

__device__ inline float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

// out[v][p] = sum_a in[a][p] w[a][v]
__global__ void compress_kernel(const float2* in, float2* out, const float2* w, int in_coils, int coils,
                                std::size_t points) {
  for (std::size_t p = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; p < points;
       p += std::size_t(gridDim.x) * blockDim.x) {
    for (int v = 0; v < coils; ++v) {
      float2 acc = make_float2(0.f, 0.f);
      for (int a = 0; a < in_coils; ++a) {
        const float2 t = cmul(in[std::size_t(a) * points + p], w[a * coils + v]);
        acc.x += t.x;
        acc.y += t.y;
      }
      out[std::size_t(v) * points + p] = acc;
    }
  }
}

// The coil covariance in double: block (a, b) sums conj(x_a(p)) x_b(p) over the points for b >= a.
__global__ void __launch_bounds__(kThreads)
    covariance_kernel(const float2* in, int coils, std::size_t points, double2* out) {
  const int a = blockIdx.x, b = blockIdx.y;
  if (b < a) return;
  double sr = 0, si = 0;
  for (std::size_t p = threadIdx.x; p < points; p += kThreads) {
    const float2 xa = in[std::size_t(a) * points + p], xb = in[std::size_t(b) * points + p];
    sr += double(xa.x) * xb.x + double(xa.y) * xb.y;
    si += double(xa.x) * xb.y - double(xa.y) * xb.x;
  }
  __shared__ double s_r[kThreads], s_i[kThreads];
  s_r[threadIdx.x] = sr;
  s_i[threadIdx.x] = si;
  __syncthreads();
  for (int d = kThreads / 2; d > 0; d /= 2) {
    if (int(threadIdx.x) < d) {
      s_r[threadIdx.x] += s_r[threadIdx.x + d];
      s_i[threadIdx.x] += s_i[threadIdx.x + d];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[std::size_t(a) * coils + b] = make_double2(s_r[0], s_i[0]);
}

class CoilCompressorCuda final : public CoilCompressor {
 public:
  explicit CoilCompressorCuda(gpu::StreamRef stream) : stream_(stream) {}
  Location location() const override { return Location::Device; }

  std::vector<std::complex<double>> covariance(const cfloat* in, int coils, std::size_t points) override {
    auto s = static_cast<cudaStream_t>(stream_);
    const std::size_t n = std::size_t(coils) * coils;
    if (cov_.size() != 2 * n)
      cov_ = DeviceBuffer<double>(Extents{2 * n});  // (re, im) pairs; once a coil count
    covariance_kernel<<<dim3(unsigned(coils), unsigned(coils)), kThreads, 0, s>>>(
        reinterpret_cast<const float2*>(in), coils, points, reinterpret_cast<double2*>(cov_.data()));
    CUDA_CHECK_LAUNCH("coil covariance");
    std::vector<std::complex<double>> cov(n);
    gpu::copy_to_host(cov.data(), cov_.data(), n * sizeof(std::complex<double>), stream_);
    gpu::synchronize(stream_);
    for (int a = 0; a < coils; ++a)  // the lower triangle, from the upper
      for (int b = 0; b < a; ++b)
        cov[std::size_t(a) * coils + b] = std::conj(cov[std::size_t(b) * coils + a]);
    return cov;
  }

  void set(const CoilCompression& cc) override {
    matrix_ = DeviceBuffer<cfloat>(Extents{cc.matrix.size()});
    gpu::copy_to_device(matrix_.data(), cc.matrix.data(), cc.matrix.size() * sizeof(cfloat), stream_);
    gpu::synchronize(stream_);  // the host matrix may go
    in_coils_ = cc.coils;
    coils_ = cc.virtual_coils;
  }

  void compress(const cfloat* in, cfloat* out, std::size_t points) override {
    auto s = static_cast<cudaStream_t>(stream_);
    compress_kernel<<<blocks(points), kThreads, 0, s>>>(
        reinterpret_cast<const float2*>(in), reinterpret_cast<float2*>(out),
        reinterpret_cast<const float2*>(matrix_.data()), in_coils_, coils_, points);
    CUDA_CHECK_LAUNCH("coil compress");
  }

 private:
  gpu::StreamRef stream_;
  DeviceBuffer<double> cov_;
  DeviceBuffer<cfloat> matrix_;
  int in_coils_ = 0, coils_ = 0;
};

}  // namespace

std::unique_ptr<CoilCompressor> make_coil_compressor_cuda(gpu::StreamRef stream) {
  return std::make_unique<CoilCompressorCuda>(stream);
}

}  // namespace radstream
