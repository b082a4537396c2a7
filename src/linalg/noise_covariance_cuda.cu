#include <optional>
#include <string>

#include "core/error.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "linalg/noise_covariance.hpp"

namespace radstream {
namespace {

constexpr int kThreads = 256;

struct OnGpu {  // `gpu` current for the scope (-1: leave the current one)
  explicit OnGpu(int gpu) {
    if (gpu >= 0) guard.emplace(gpu);
  }
  std::optional<gpu::DeviceGuard> guard;
};

// One block per coil pair (i, j), j <= i (blockIdx.x enumerates the lower triangle): its threads sum
// a_i[s] conj(a_j[s]) over the samples in double, reduce in shared memory, and add into the pair's entry.
__global__ void noise_pairs(const float2* __restrict__ data, int coils, int samples,
                            double2* __restrict__ sum) {
  int i = 0, rest = int(blockIdx.x);
  while (rest > i) rest -= ++i;  // (at most 64 coils: a few steps)
  const int j = rest;
  const float2* a = data + std::size_t(i) * samples;
  const float2* b = data + std::size_t(j) * samples;
  double re = 0, im = 0;
  for (int s = int(threadIdx.x); s < samples; s += kThreads) {
    const double ar = a[s].x, ai = a[s].y, br = b[s].x, bi = b[s].y;
    re += ar * br + ai * bi;
    im += ai * br - ar * bi;
  }
  __shared__ double sre[kThreads], sim[kThreads];
  sre[threadIdx.x] = re;
  sim[threadIdx.x] = im;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) {
      sre[threadIdx.x] += sre[threadIdx.x + w];
      sim[threadIdx.x] += sim[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    double2& e = sum[std::size_t(i) * coils + j];
    e.x += sre[0];
    e.y += sim[0];
  }
}

class NoiseCovarianceCuda final : public NoiseCovariance {
 public:
  NoiseCovarianceCuda(int coils, int gpu) : NoiseCovariance(coils), gpu_(gpu) {
    const OnGpu on(gpu_);
    stream_ = std::make_unique<gpu::Stream>();
    const std::size_t C = std::size_t(coils);
    d_sum_ = DeviceBuffer<std::complex<double>>(Extents{C, C});
    gpu::memset_device(d_sum_.data(), 0, C * C * sizeof(std::complex<double>), stream_->get());
  }

  void add(std::span<const cfloat> data, int samples) override {
    check(data, samples);
    if (samples == 0) return;
    const OnGpu on(gpu_);
    if (d_data_.size() < data.size()) d_data_ = DeviceBuffer<cfloat>(Extents{data.size()});
    const cudaStream_t s = static_cast<cudaStream_t>(stream_->get());
    gpu::copy_to_device(d_data_.data(), data.data(), data.size_bytes(), stream_->get());
    const unsigned pairs = unsigned(coils_) * unsigned(coils_ + 1) / 2;
    noise_pairs<<<pairs, kThreads, 0, s>>>(reinterpret_cast<const float2*>(d_data_.data()), coils_, samples,
                                           reinterpret_cast<double2*>(d_sum_.data()));
    CUDA_CHECK_LAUNCH("noise_pairs");
    gpu::synchronize(stream_->get());  // the caller may reuse `data` at once
  }

  std::vector<std::complex<double>> sum() const override {
    const OnGpu on(gpu_);
    const std::size_t C = std::size_t(coils_);
    std::vector<std::complex<double>> out(C * C);
    gpu::copy_to_host(out.data(), d_sum_.data(), C * C * sizeof(std::complex<double>), stream_->get());
    gpu::synchronize(stream_->get());
    for (std::size_t i = 0; i < C; ++i)
      for (std::size_t j = 0; j < i; ++j) out[j * C + i] = std::conj(out[i * C + j]);
    return out;
  }

 private:
  int gpu_;
  std::unique_ptr<gpu::Stream> stream_;
  DeviceBuffer<std::complex<double>> d_sum_;  // lower triangle used
  DeviceBuffer<cfloat> d_data_;
};

}  // namespace

std::unique_ptr<NoiseCovariance> make_noise_covariance_cuda(int coils, int gpu) {
  if (coils < 1) throw InputError("noise covariance of " + std::to_string(coils) + " coils");
  return std::make_unique<NoiseCovarianceCuda>(coils, gpu);
}

}  // namespace radstream
