#include "exact/time_segmented.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream {

namespace {

// out_v = in_v exp(sign 2 pi i fm_v t) (accumulate: out_v += ...).
template <bool ACCUMULATE>
__global__ void phase_multiply(const float2* __restrict__ in, const float* __restrict__ fm, float t, float sign,
                               long long V, float2* __restrict__ out) {
  const long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (v >= V) return;
  float e = 0.0f;
  const float p = fm[v] * t;
  e = fmaf(fm[v], t, -p);
  float f = (p - rintf(p)) + e;
  f -= rintf(f);
  float s, c;
  sincospif(2.0f * sign * f, &s, &c);
  const float2 a = in[v];
  float2 r = make_float2(a.x * c - a.y * s, a.x * s + a.y * c);
  if (ACCUMULATE) {
    r.x += out[v].x;
    r.y += out[v].y;
  }
  out[v] = r;
}

// out_m (+)= b_(m mod Mt) in_m (the weights of one coil's samples, repeated for every coil).
template <bool ACCUMULATE>
__global__ void weight_multiply(const float2* __restrict__ in, const float* __restrict__ b, long long M, long long Mt,
                                float2* __restrict__ out) {
  const long long m = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (m >= M) return;
  const float w = b[m % Mt];
  float2 r = make_float2(w * in[m].x, w * in[m].y);
  if (ACCUMULATE) {
    r.x += out[m].x;
    r.y += out[m].y;
  }
  out[m] = r;
}

unsigned blocks_of(long long n) { return unsigned((n + 255) / 256); }

}  // namespace

TimeSegmentedCuda::TimeSegmentedCuda(std::shared_ptr<LinearOperator> f, const std::vector<float>& fm,
                                     const std::vector<float>& t, int segments, gpu::StreamRef stream)
    : LinearOperator(f->domain(), f->codomain(), Location::Device), f_(std::move(f)), stream_(stream) {
  const TimeSegments seg = make_time_segments(t, segments);
  const std::size_t V = domain().size(), M = codomain().size();
  if (fm.size() != V || t.empty() || M % t.size() != 0)
    throw InputError("time segments: " + std::to_string(fm.size()) + " field-map values and " +
                     std::to_string(t.size()) + " times for " + std::to_string(V) + " voxels and " +
                     std::to_string(M) + " samples (times: one per sample, repeated for every coil)");
  Mt_ = (long long)t.size();
  L_ = int(seg.times.size());
  times_ = seg.times;
  d_fm_ = DeviceBuffer<float>(Extents{V});
  d_b_ = DeviceBuffer<float>(Extents{seg.weights.size()});
  d_tx_ = DeviceBuffer<cfloat>(Extents{V});
  d_ty_ = DeviceBuffer<cfloat>(Extents{M});
  gpu::copy_to_device(d_fm_.data(), fm.data(), V * sizeof(float), stream);
  gpu::copy_to_device(d_b_.data(), seg.weights.data(), seg.weights.size() * sizeof(float), stream);
  gpu::synchronize(stream);
}

void TimeSegmentedCuda::forward(const cfloat* d_x, cfloat* d_y) {
  auto s = static_cast<cudaStream_t>(stream_);
  const long long V = (long long)domain().size(), M = (long long)codomain().size();
  auto* tx = reinterpret_cast<float2*>(d_tx_.data());
  auto* ty = reinterpret_cast<float2*>(d_ty_.data());
  for (int l = 0; l < L_; ++l) {
    phase_multiply<false><<<blocks_of(V), 256, 0, s>>>(reinterpret_cast<const float2*>(d_x), d_fm_.data(),
                                                       times_[l], -1.0f, V, tx);
    CUDA_CHECK_LAUNCH("time segments phase_multiply");
    f_->forward(d_tx_.data(), d_ty_.data());
    const float* b = d_b_.data() + std::size_t(l) * std::size_t(Mt_);
    if (l == 0)
      weight_multiply<false><<<blocks_of(M), 256, 0, s>>>(ty, b, M, Mt_, reinterpret_cast<float2*>(d_y));
    else
      weight_multiply<true><<<blocks_of(M), 256, 0, s>>>(ty, b, M, Mt_, reinterpret_cast<float2*>(d_y));
    CUDA_CHECK_LAUNCH("time segments weight_multiply");
  }
}

void TimeSegmentedCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  auto s = static_cast<cudaStream_t>(stream_);
  const long long V = (long long)domain().size(), M = (long long)codomain().size();
  auto* tx = reinterpret_cast<float2*>(d_tx_.data());
  auto* ty = reinterpret_cast<float2*>(d_ty_.data());
  for (int l = 0; l < L_; ++l) {
    const float* b = d_b_.data() + std::size_t(l) * std::size_t(Mt_);
    weight_multiply<false><<<blocks_of(M), 256, 0, s>>>(reinterpret_cast<const float2*>(d_y), b, M, Mt_, ty);
    CUDA_CHECK_LAUNCH("time segments weight_multiply");
    f_->adjoint(d_ty_.data(), d_tx_.data());
    if (l == 0)
      phase_multiply<false><<<blocks_of(V), 256, 0, s>>>(tx, d_fm_.data(), times_[l], 1.0f, V,
                                                         reinterpret_cast<float2*>(d_x));
    else
      phase_multiply<true><<<blocks_of(V), 256, 0, s>>>(tx, d_fm_.data(), times_[l], 1.0f, V,
                                                        reinterpret_cast<float2*>(d_x));
    CUDA_CHECK_LAUNCH("time segments phase_multiply");
  }
}

}  // namespace radstream
