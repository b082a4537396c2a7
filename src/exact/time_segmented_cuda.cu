#include "exact/time_segmented.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream {

namespace {

// out_v (+)= in_v e_v, or in_v conj(e_v) (e: one segment's phasors exp(-2 pi i fm_v t_l), made once).
template <bool CONJ, bool ACCUMULATE>
__global__ void phase_multiply(const float2* __restrict__ in, const float2* __restrict__ e, long long V,
                               float2* __restrict__ out) {
  const long long v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (v >= V) return;
  const float2 a = in[v];
  const float c = e[v].x, s = CONJ ? -e[v].y : e[v].y;
  float2 r = make_float2(a.x * c - a.y * s, a.x * s + a.y * c);
  if (ACCUMULATE) {
    r.x += out[v].x;
    r.y += out[v].y;
  }
  out[v] = r;
}

// out_m (+)= b_(m mod Mt) in_m (the weights of one coil's samples, repeated for every coil).
template <bool ACCUMULATE>
__global__ void weight_multiply(const float2* __restrict__ in, const float* __restrict__ b, long long M,
                                long long Mt, float2* __restrict__ out) {
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

unsigned blocks_of(long long n) {
  return unsigned((n + 255) / 256);
}

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
  const std::vector<cfloat> e = segment_phasors(fm, seg.times);  // the CPU twin's, so both use the same
  d_e_ = DeviceBuffer<cfloat>(Extents{e.size()});
  d_b_ = DeviceBuffer<float>(Extents{seg.weights.size()});
  d_tx_ = DeviceBuffer<cfloat>(Extents{V});
  d_ty_ = DeviceBuffer<cfloat>(Extents{M});
  gpu::copy_to_device(d_e_.data(), e.data(), e.size() * sizeof(cfloat), stream);
  gpu::copy_to_device(d_b_.data(), seg.weights.data(), seg.weights.size() * sizeof(float), stream);
  gpu::synchronize(stream);
}

void TimeSegmentedCuda::forward(const cfloat* d_x, cfloat* d_y) {
  auto s = static_cast<cudaStream_t>(stream_);
  const long long V = (long long)domain().size(), M = (long long)codomain().size();
  auto* tx = reinterpret_cast<float2*>(d_tx_.data());
  auto* ty = reinterpret_cast<float2*>(d_ty_.data());
  for (int l = 0; l < L_; ++l) {
    const auto* el = reinterpret_cast<const float2*>(e(l));
    phase_multiply<false, false>
        <<<blocks_of(V), 256, 0, s>>>(reinterpret_cast<const float2*>(d_x), el, V, tx);
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
    const auto* el = reinterpret_cast<const float2*>(e(l));
    auto* x = reinterpret_cast<float2*>(d_x);
    if (l == 0)
      phase_multiply<true, false><<<blocks_of(V), 256, 0, s>>>(tx, el, V, x);
    else
      phase_multiply<true, true><<<blocks_of(V), 256, 0, s>>>(tx, el, V, x);
    CUDA_CHECK_LAUNCH("time segments phase_multiply");
  }
}

}  // namespace radstream
