#include <algorithm>
#include <vector>

#include "exact/exact_cuda.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream {

namespace {

constexpr int kThreads = 256;  // threads per block, and the length of a shared-memory tile
constexpr int kRun = 8;        // voxels per thread along the fastest axis (the phasor recurrence's run)
constexpr long long kTargetThreads = 1 << 18;  // split the sum across blocks until about this many threads run

struct GridArgs {
  int n0, n1, n2;
  float o0, o1, o2;
};

GridArgs grid_args(const ExactGrid& g) {
  return {g.n[0], g.n[1], g.n[2], float(g.origin[0]), float(g.origin[1]), float(g.origin[2])};
}

// The fractional part (cycles) of a*b, its rounding error added to err exactly (fma): sums of these keep the
// phase accurate to float's epsilon in cycles whatever the size of k . r.
__device__ __forceinline__ float frac_prod(float a, float b, float& err) {
  const float p = a * b;
  err += fmaf(a, b, -p);
  return p - rintf(p);
}

// cos and sin of 2 pi f, f in [-0.5, 0.5].
template <bool FAST>
__device__ __forceinline__ void cis(float f, float& c, float& s) {
  if constexpr (FAST) {
    __sincosf(6.28318530717958647692f * f, &s, &c);
  } else {
    sincospif(2.0f * f, &s, &c);
  }
}

template <bool FAST>
__device__ __forceinline__ float sinc(float u) {
  if (u == 0.0f) return 1.0f;
  if constexpr (FAST) {
    const float r = u - 2.0f * rintf(0.5f * u);  // sin(pi u) = sin(pi r), r in [-1, 1]
    return __fdividef(__sinf(3.14159265358979323846f * r), 3.14159265358979323846f * u);
  } else {
    return sinpif(u) / (3.14159265358979323846f * u);
  }
}

// The range of samples (adjoint) or voxels (forward) of block row blockIdx.y when the sum is split.
__device__ __forceinline__ void segment(long long count, long long& begin, long long& end) {
  const long long tiles = (count + kThreads - 1) / kThreads;
  const long long per = (tiles + gridDim.y - 1) / gridDim.y;
  begin = min(count, blockIdx.y * per * kThreads);
  end = min(count, (blockIdx.y + 1) * per * kThreads);
}

// x_v = sum_m d_m exp(+2 pi i k_m . r_v): a run of kRun voxels along axis 2 per thread.
template <bool FAST>
__global__ void __launch_bounds__(kThreads) adjoint_plain(const float4* __restrict__ smp, const float2* __restrict__ d,
                                                          int M, GridArgs g, float2* __restrict__ out) {
  __shared__ float4 s_k[kThreads];
  __shared__ float4 s_d[kThreads];  // d, then the step phasor exp(+2 pi i k2)
  const long long runs = (g.n2 + kRun - 1) / kRun;
  const long long tid = blockIdx.x * (long long)kThreads + threadIdx.x;
  const bool active = tid < (long long)g.n0 * g.n1 * runs;
  const int c = int(tid % runs);
  const long long row = tid / runs;
  const int i1 = int(row % g.n1), i0 = int(row / g.n1);
  const float r0 = g.o0 + float(i0), r1 = g.o1 + float(i1), r2 = g.o2 + float(c * kRun);
  float tr[kRun], ti[kRun];
#pragma unroll
  for (int q = 0; q < kRun; ++q) tr[q] = ti[q] = 0.0f;
  long long begin, end;
  segment(M, begin, end);
  for (long long base = begin; base < end; base += kThreads) {
    const long long i = base + threadIdx.x;
    __syncthreads();
    if (i < end) {
      const float4 k = smp[i];
      const float2 dv = d[i];
      float sc, ss;
      cis<FAST>(k.z - rintf(k.z), sc, ss);
      s_k[threadIdx.x] = k;
      s_d[threadIdx.x] = make_float4(dv.x, dv.y, sc, ss);
    }
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    float pr[kRun], pi[kRun];
#pragma unroll
    for (int q = 0; q < kRun; ++q) pr[q] = pi[q] = 0.0f;
    for (int j = 0; j < len; ++j) {
      const float4 k = s_k[j];
      const float4 dd = s_d[j];
      float e = 0.0f;
      float f = frac_prod(k.x, r0, e) + frac_prod(k.y, r1, e) + frac_prod(k.z, r2, e);
      f += e;
      f -= rintf(f);
      float c0, s0;
      cis<FAST>(f, c0, s0);
      float ur = dd.x * c0 - dd.y * s0, ui = dd.x * s0 + dd.y * c0;
      pr[0] += ur;
      pi[0] += ui;
#pragma unroll
      for (int q = 1; q < kRun; ++q) {
        const float nr = ur * dd.z - ui * dd.w;
        ui = fmaf(ur, dd.w, ui * dd.z);
        ur = nr;
        pr[q] += ur;
        pi[q] += ui;
      }
    }
#pragma unroll
    for (int q = 0; q < kRun; ++q) {
      tr[q] += pr[q];
      ti[q] += pi[q];
    }
  }
  if (!active) return;
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  float2* o = out + blockIdx.y * V + row * g.n2 + c * kRun;
#pragma unroll
  for (int q = 0; q < kRun; ++q)
    if (c * kRun + q < g.n2) o[q] = make_float2(tr[q], ti[q]);
}

// d_m = sum_v x_v exp(-2 pi i k_m . r_v): one sample per thread, voxels staged in tiles and walked in runs of
// kRun along axis 2 (the runs depend on the tile only, so a warp never diverges).
template <bool FAST>
__global__ void __launch_bounds__(kThreads) forward_plain(const float4* __restrict__ smp, const float2* __restrict__ x,
                                                          int M, GridArgs g, float2* __restrict__ out) {
  __shared__ float2 s_x[kThreads];
  const int i = blockIdx.x * kThreads + threadIdx.x;
  const float4 k = i < M ? smp[i] : make_float4(0, 0, 0, 0);
  float sc, ss;
  cis<FAST>(k.z - rintf(k.z), sc, ss);
  ss = -ss;  // exp(-2 pi i k2)
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  float tr = 0.0f, ti = 0.0f;
  long long begin, end;
  segment(V, begin, end);
  for (long long base = begin; base < end; base += kThreads) {
    __syncthreads();
    if (base + threadIdx.x < end) s_x[threadIdx.x] = x[base + threadIdx.x];
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    int i2 = int(base % g.n2);
    const long long row = base / g.n2;
    int i1 = int(row % g.n1), i0 = int(row / g.n1);
    float pr = 0.0f, pi = 0.0f;
    for (int j = 0; j < len;) {
      const int run = min(kRun, min(len - j, g.n2 - i2));
      float e = 0.0f;
      float f = frac_prod(k.x, g.o0 + float(i0), e) + frac_prod(k.y, g.o1 + float(i1), e) +
                frac_prod(k.z, g.o2 + float(i2), e);
      f += e;
      f -= rintf(f);
      float er, ei;
      cis<FAST>(f, er, ei);
      ei = -ei;
#pragma unroll
      for (int q = 0; q < kRun; ++q) {
        if (q < run) {
          const float2 xv = s_x[j + q];
          pr = fmaf(xv.x, er, fmaf(-xv.y, ei, pr));
          pi = fmaf(xv.x, ei, fmaf(xv.y, er, pi));
          const float nr = er * sc - ei * ss;
          ei = fmaf(er, ss, ei * sc);
          er = nr;
        }
      }
      j += run;
      i2 += run;
      if (i2 == g.n2) {
        i2 = 0;
        if (++i1 == g.n1) {
          i1 = 0;
          ++i0;
        }
      }
    }
    tr += pr;
    ti += pi;
  }
  if (i < M) out[blockIdx.y * (long long)M + i] = make_float2(tr, ti);
}

// The field model's pair term: phase (cycles, reduced) and the sinc weight.
template <bool FAST, bool GRADS>
__device__ __forceinline__ void field_term(const float4& k, float r0, float r1, float r2, const float4& vf,
                                           float& c, float& s, float& w) {
  float e = 0.0f;
  float f = frac_prod(k.x, r0, e) + frac_prod(k.y, r1, e) + frac_prod(k.z, r2, e) + frac_prod(vf.x, k.w, e);
  f += e;
  f -= rintf(f);
  cis<FAST>(f, c, s);
  w = 1.0f;
  if constexpr (GRADS)
    w = sinc<FAST>(fmaf(k.w, vf.y, k.x)) * sinc<FAST>(fmaf(k.w, vf.z, k.y)) * sinc<FAST>(fmaf(k.w, vf.w, k.z));
}

// Field model, adjoint: one voxel per thread, samples (k, t) staged in tiles.
template <bool FAST, bool GRADS>
__global__ void __launch_bounds__(kThreads) adjoint_field(const float4* __restrict__ smp, const float2* __restrict__ d,
                                                          int M, GridArgs g, const float4* __restrict__ vfield,
                                                          float2* __restrict__ out) {
  __shared__ float4 s_k[kThreads];
  __shared__ float2 s_d[kThreads];
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  const long long v = blockIdx.x * (long long)kThreads + threadIdx.x;
  const bool active = v < V;
  const float r2 = g.o2 + float(v % g.n2), r1 = g.o1 + float((v / g.n2) % g.n1),
              r0 = g.o0 + float(v / ((long long)g.n2 * g.n1));
  const float4 vf = active ? vfield[v] : make_float4(0, 0, 0, 0);
  float tr = 0.0f, ti = 0.0f;
  long long begin, end;
  segment(M, begin, end);
  for (long long base = begin; base < end; base += kThreads) {
    __syncthreads();
    if (base + threadIdx.x < end) {
      s_k[threadIdx.x] = smp[base + threadIdx.x];
      s_d[threadIdx.x] = d[base + threadIdx.x];
    }
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    float pr = 0.0f, pi = 0.0f;
    for (int j = 0; j < len; ++j) {
      float c, s, w;
      field_term<FAST, GRADS>(s_k[j], r0, r1, r2, vf, c, s, w);
      const float2 dv = s_d[j];
      pr = fmaf(w, dv.x * c - dv.y * s, pr);
      pi = fmaf(w, dv.x * s + dv.y * c, pi);
    }
    tr += pr;
    ti += pi;
  }
  if (active) out[blockIdx.y * V + v] = make_float2(tr, ti);
}

// Field model, forward: one sample per thread, voxels (value, fm, g) staged in tiles.
template <bool FAST, bool GRADS>
__global__ void __launch_bounds__(kThreads) forward_field(const float4* __restrict__ smp, const float2* __restrict__ x,
                                                          int M, GridArgs g, const float4* __restrict__ vfield,
                                                          float2* __restrict__ out) {
  __shared__ float2 s_x[kThreads];
  __shared__ float4 s_f[kThreads];
  __shared__ float4 s_r[kThreads];
  const int i = blockIdx.x * kThreads + threadIdx.x;
  const float4 k = i < M ? smp[i] : make_float4(0, 0, 0, 0);
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  float tr = 0.0f, ti = 0.0f;
  long long begin, end;
  segment(V, begin, end);
  for (long long base = begin; base < end; base += kThreads) {
    __syncthreads();
    const long long v = base + threadIdx.x;
    if (v < end) {
      s_x[threadIdx.x] = x[v];
      s_f[threadIdx.x] = vfield[v];
      s_r[threadIdx.x] = make_float4(g.o0 + float(v / ((long long)g.n2 * g.n1)), g.o1 + float((v / g.n2) % g.n1),
                                     g.o2 + float(v % g.n2), 0.0f);
    }
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    float pr = 0.0f, pi = 0.0f;
    for (int j = 0; j < len; ++j) {
      const float4 r = s_r[j];
      float c, s, w;
      field_term<FAST, GRADS>(k, r.x, r.y, r.z, s_f[j], c, s, w);
      const float2 xv = s_x[j];  // x exp(-i phase)
      pr = fmaf(w, xv.x * c + xv.y * s, pr);
      pi = fmaf(w, xv.y * c - xv.x * s, pi);
    }
    tr += pr;
    ti += pi;
  }
  if (i < M) out[blockIdx.y * (long long)M + i] = make_float2(tr, ti);
}

// out[o] = sum over the S partial sums.
__global__ void sum_partials(const float2* __restrict__ part, int S, long long n, float2* __restrict__ out) {
  const long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (o >= n) return;
  float2 a = part[o];
  for (int s = 1; s < S; ++s) {
    const float2 b = part[s * n + o];
    a.x += b.x;
    a.y += b.y;
  }
  out[o] = a;
}

__global__ void real_to_complex(const float* __restrict__ w, int M, float2* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) out[i] = make_float2(w ? w[i] : 1.0f, 0.0f);
}

// How many ways to split a sum of `terms` (in tiles) so that threads * ways reaches kTargetThreads.
int split_for(long long threads, long long terms) {
  const long long tiles = (terms + kThreads - 1) / kThreads;
  const long long want = (kTargetThreads + threads - 1) / std::max(1LL, threads);
  return int(std::clamp(want, 1LL, std::max(1LL, std::min(tiles, 4096LL))));
}

unsigned blocks(long long threads) { return unsigned((threads + kThreads - 1) / kThreads); }

}  // namespace

struct ExactDeviceModel {
  ExactGrid grid, qgrid;
  int M = 0;
  bool field = false, grads = false;
  DeviceBuffer<float4> samples;  // k0, k1, k2, t
  DeviceBuffer<float4> vfield;   // fm, g0, g1, g2 (field only)
  DeviceBuffer<cfloat> weights;  // Q's sample weights as complex data
  DeviceBuffer<cfloat> partials;
  int split_adjoint = 1, split_forward = 1, split_q = 1;
};

ExactOperatorCuda::ExactOperatorCuda(const ExactModel& model, bool fast, gpu::StreamRef stream)
    : LinearOperator(Extents{std::size_t(model.grid.n[0]), std::size_t(model.grid.n[1]), std::size_t(model.grid.n[2])},
                     Extents{model.samples()}, Location::Device),
      stream_(stream),
      fast_(fast) {
  const ExactModel m = model.filled();
  auto dm = std::make_unique<ExactDeviceModel>();
  dm->grid = m.grid;
  dm->qgrid = m.grid.q_grid();
  const std::size_t M = m.samples(), V = m.voxels();
  if (M > std::size_t(1) << 30) throw InputError("exact model: " + std::to_string(M) + " samples is too many");
  dm->M = int(M);
  dm->field = m.has_field();
  dm->grads = m.has_gradients();
  std::vector<float4> h(M);
  for (std::size_t i = 0; i < M; ++i) h[i] = make_float4(m.k[0][i], m.k[1][i], m.k[2][i], m.t.empty() ? 0.0f : m.t[i]);
  dm->samples = DeviceBuffer<float4>(Extents{M});
  gpu::copy_to_device(dm->samples.data(), h.data(), M * sizeof(float4), stream);
  std::vector<float4> hv;
  if (dm->field) {
    hv.resize(V);
    for (std::size_t v = 0; v < V; ++v)
      hv[v] = dm->grads ? make_float4(m.fm[v], m.g[0][v], m.g[1][v], m.g[2][v]) : make_float4(m.fm[v], 0, 0, 0);
    dm->vfield = DeviceBuffer<float4>(Extents{V});
    gpu::copy_to_device(dm->vfield.data(), hv.data(), V * sizeof(float4), stream);
  }
  const long long runs = (m.grid.n[2] + kRun - 1) / kRun;
  const long long adj_threads = dm->field ? (long long)V : (long long)m.grid.n[0] * m.grid.n[1] * runs;
  const ExactGrid& q = dm->qgrid;
  dm->split_adjoint = split_for(adj_threads, M);
  dm->split_forward = split_for((long long)M, (long long)V);
  dm->split_q = split_for((long long)q.n[0] * q.n[1] * ((q.n[2] + kRun - 1) / kRun), M);
  const std::size_t part = std::max({dm->split_adjoint > 1 ? dm->split_adjoint * V : 0,
                                     dm->split_forward > 1 ? dm->split_forward * M : 0,
                                     dm->split_q > 1 ? dm->split_q * q.voxels() : 0});
  if (part) dm->partials = DeviceBuffer<cfloat>(Extents{part});
  dm->weights = DeviceBuffer<cfloat>(Extents{M});
  gpu::synchronize(stream);
  dm_ = dm.release();
}

ExactOperatorCuda::~ExactOperatorCuda() { delete dm_; }

namespace {

void finish(ExactDeviceModel& dm, int split, long long n, float2* out, cudaStream_t s) {
  if (split <= 1) return;
  sum_partials<<<blocks(n), kThreads, 0, s>>>(reinterpret_cast<const float2*>(dm.partials.data()), split, n, out);
  CUDA_CHECK_LAUNCH("exact sum_partials");
}

template <bool FAST>
void launch_adjoint(ExactDeviceModel& dm, const ExactGrid& grid, int split, const float2* d, float2* x,
                    cudaStream_t s) {
  const GridArgs g = grid_args(grid);
  float2* out = split > 1 ? reinterpret_cast<float2*>(dm.partials.data()) : x;
  const long long V = (long long)grid.voxels();
  if (!dm.field || &grid == &dm.qgrid) {
    const long long threads = (long long)g.n0 * g.n1 * ((g.n2 + kRun - 1) / kRun);
    adjoint_plain<FAST><<<dim3(blocks(threads), unsigned(split)), kThreads, 0, s>>>(dm.samples.data(), d, dm.M, g, out);
  } else if (dm.grads) {
    adjoint_field<FAST, true><<<dim3(blocks(V), unsigned(split)), kThreads, 0, s>>>(dm.samples.data(), d, dm.M, g,
                                                                                     dm.vfield.data(), out);
  } else {
    adjoint_field<FAST, false><<<dim3(blocks(V), unsigned(split)), kThreads, 0, s>>>(dm.samples.data(), d, dm.M, g,
                                                                                      dm.vfield.data(), out);
  }
  CUDA_CHECK_LAUNCH("exact adjoint");
  finish(dm, split, V, x, s);
}

template <bool FAST>
void launch_forward(ExactDeviceModel& dm, const float2* x, float2* d, cudaStream_t s) {
  const GridArgs g = grid_args(dm.grid);
  const int split = dm.split_forward;
  float2* out = split > 1 ? reinterpret_cast<float2*>(dm.partials.data()) : d;
  const dim3 grid(blocks(dm.M), unsigned(split));
  if (!dm.field)
    forward_plain<FAST><<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, out);
  else if (dm.grads)
    forward_field<FAST, true><<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, dm.vfield.data(), out);
  else
    forward_field<FAST, false><<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, dm.vfield.data(), out);
  CUDA_CHECK_LAUNCH("exact forward");
  finish(dm, split, dm.M, d, s);
}

}  // namespace

void ExactOperatorCuda::forward(const cfloat* d_x, cfloat* d_y) {
  auto s = static_cast<cudaStream_t>(stream_);
  const auto* x = reinterpret_cast<const float2*>(d_x);
  auto* y = reinterpret_cast<float2*>(d_y);
  fast_ ? launch_forward<true>(*dm_, x, y, s) : launch_forward<false>(*dm_, x, y, s);
}

void ExactOperatorCuda::adjoint(const cfloat* d_y, cfloat* d_x) {
  auto s = static_cast<cudaStream_t>(stream_);
  const auto* y = reinterpret_cast<const float2*>(d_y);
  auto* x = reinterpret_cast<float2*>(d_x);
  fast_ ? launch_adjoint<true>(*dm_, dm_->grid, dm_->split_adjoint, y, x, s)
        : launch_adjoint<false>(*dm_, dm_->grid, dm_->split_adjoint, y, x, s);
}

void ExactOperatorCuda::q(const float* d_w, cfloat* d_q) {
  auto s = static_cast<cudaStream_t>(stream_);
  real_to_complex<<<blocks(dm_->M), kThreads, 0, s>>>(d_w, dm_->M, reinterpret_cast<float2*>(dm_->weights.data()));
  CUDA_CHECK_LAUNCH("exact q weights");
  const auto* w = reinterpret_cast<const float2*>(dm_->weights.data());
  auto* q = reinterpret_cast<float2*>(d_q);
  fast_ ? launch_adjoint<true>(*dm_, dm_->qgrid, dm_->split_q, w, q, s)
        : launch_adjoint<false>(*dm_, dm_->qgrid, dm_->split_q, w, q, s);
}

}  // namespace radstream
