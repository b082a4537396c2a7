#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "exact/exact_cuda.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream {

namespace {

constexpr int kThreads = 256;  // threads per block, and the length of a shared-memory tile
constexpr int kRun = 16;       // voxels per thread along the fastest axis (the phasor recurrence's run)
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

// sin(pi u) and pi u of one sinc factor, (1, 1) at u = 0: the caller divides the products once.
__device__ __forceinline__ void sinc_parts(float u, float& num, float& den) {
  if (u == 0.0f) return;
  num *= sinpif(u);
  den *= 3.14159265358979323846f * u;
}

constexpr int kSegment = 32;  // a split sum's parts are whole multiples of this many terms

// The range of samples (adjoint) or voxels (forward) of block row blockIdx.y when the sum is split.
__device__ __forceinline__ void segment(long long count, long long& begin, long long& end) {
  const long long units = (count + kSegment - 1) / kSegment;
  const long long per = (units + gridDim.y - 1) / gridDim.y;
  begin = min(count, blockIdx.y * per * kSegment);
  end = min(count, (blockIdx.y + 1) * per * kSegment);
}

// x_v = sum_m d_m exp(+2 pi i k_m . r_v): a run of kRun voxels along axis 2 per thread. PAIRED: a trajectory
// symmetric about k = 0 (seed 000's): each entry stands for k and -k, data {A, B, C, D} from the pair's values
// d1 (at k) and d2 (at -k) as A = Re d1 + Re d2, B = Im d1 - Im d2, C = Im d1 + Im d2, D = Re d1 - Re d2, so
// that d1 e + d2 conj(e) = (A Re e - B Im e) + i (C Re e + D Im e): one phasor and four FMAs per voxel for
// two samples (for Q with real weights B = C = 0 and the imaginary part is exactly 0 when D = 0).
// REAL (paired, for Q with pairs of equal real weights): only the real part is formed (it is all there is).
template <bool FAST, bool PAIRED, bool REAL = false>
__global__ void __launch_bounds__(kThreads) adjoint_plain(const float4* __restrict__ smp, const void* __restrict__ data,
                                                          int M, GridArgs g, float2* __restrict__ out) {
  __shared__ float4 s_k[kThreads];  // k, and in .w: nothing (plain) or unused
  __shared__ float4 s_d[kThreads];  // plain: d, then the step phasor; paired: A, B, C, D
  __shared__ float2 s_step[kThreads];
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
      float sc, ss;
      cis<FAST>(k.z - rintf(k.z), sc, ss);
      s_k[threadIdx.x] = k;
      if constexpr (PAIRED) {
        s_d[threadIdx.x] = static_cast<const float4*>(data)[i];
      } else {
        const float2 dv = static_cast<const float2*>(data)[i];
        s_d[threadIdx.x] = make_float4(dv.x, dv.y, 0.0f, 0.0f);
      }
      s_step[threadIdx.x] = make_float2(sc, ss);
    }
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    float pr[kRun], pi[kRun];
#pragma unroll
    for (int q = 0; q < kRun; ++q) pr[q] = pi[q] = 0.0f;
    for (int j = 0; j < len; ++j) {
      const float4 k = s_k[j];
      const float4 dd = s_d[j];
      const float2 st = s_step[j];
      float e = 0.0f;
      float f = frac_prod(k.x, r0, e) + frac_prod(k.y, r1, e) + frac_prod(k.z, r2, e);
      f += e;
      f -= rintf(f);
      float c0, s0;
      cis<FAST>(f, c0, s0);
      if constexpr (REAL) {
        float er = c0, ei = s0;
#pragma unroll
        for (int q = 0; q < kRun; ++q) {
          pr[q] = fmaf(dd.x, er, pr[q]);
          const float nr = er * st.x - ei * st.y;
          ei = fmaf(er, st.y, ei * st.x);
          er = nr;
        }
      } else if constexpr (PAIRED) {
        float er = c0, ei = s0;
#pragma unroll
        for (int q = 0; q < kRun; ++q) {
          pr[q] = fmaf(dd.x, er, fmaf(-dd.y, ei, pr[q]));
          pi[q] = fmaf(dd.z, er, fmaf(dd.w, ei, pi[q]));
          const float nr = er * st.x - ei * st.y;
          ei = fmaf(er, st.y, ei * st.x);
          er = nr;
        }
      } else {
        float ur = dd.x * c0 - dd.y * s0, ui = dd.x * s0 + dd.y * c0;
        pr[0] += ur;
        pi[0] += ui;
#pragma unroll
        for (int q = 1; q < kRun; ++q) {
          const float nr = ur * st.x - ui * st.y;
          ui = fmaf(ur, st.y, ui * st.x);
          ur = nr;
          pr[q] += ur;
          pi[q] += ui;
        }
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

// The paired data {A, B, C, D} of each symmetric pair (i, j) from complex values d.
__global__ void pair_data(const float2* __restrict__ d, const int2* __restrict__ pairs, int P, float4* __restrict__ out) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= P) return;
  const int2 ij = pairs[p];
  const float2 a = d[ij.x], b = d[ij.y];
  out[p] = make_float4(a.x + b.x, a.y - b.y, a.y + b.y, a.x - b.x);
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

// The field model's pair term: phase (cycles, reduced) and the sinc weight (one division for the three).
// w0: the sample's sinc product without gradients, used for the voxels that have none (most of an image:
// the gradients live near air-tissue boundaries), which then skip the three sinpif and the division.
template <bool FAST>
__device__ __forceinline__ float sinc_product(float u0, float u1, float u2) {
  float num = 1.0f, den = 1.0f;
  sinc_parts(u0, num, den);
  sinc_parts(u1, num, den);
  sinc_parts(u2, num, den);
  return FAST ? __fdividef(num, den) : num / den;
}

template <bool FAST, bool GRADS>
__device__ __forceinline__ void field_term(const float4& k, float r0, float r1, float r2, const float4& vf, float w0,
                                           float& c, float& s, float& w) {
  float e = 0.0f;
  float f = frac_prod(k.x, r0, e) + frac_prod(k.y, r1, e) + frac_prod(k.z, r2, e) + frac_prod(vf.x, k.w, e);
  f += e;
  f -= rintf(f);
  cis<FAST>(f, c, s);
  w = 1.0f;
  if constexpr (GRADS) {
    if (vf.y == 0.0f && vf.z == 0.0f && vf.w == 0.0f)
      w = w0;
    else
      w = sinc_product<FAST>(fmaf(k.w, vf.y, k.x), fmaf(k.w, vf.z, k.y), fmaf(k.w, vf.w, k.z));
  }
}

// Field model, adjoint: one voxel per thread, samples (k, t) staged in tiles.
// Every term is added in double: the field model's sums cancel heavily and CG amplifies what float loses there.
template <bool FAST, bool GRADS>
__global__ void __launch_bounds__(kThreads) adjoint_field(const float4* __restrict__ smp, const float2* __restrict__ d,
                                                          int M, GridArgs g, const float4* __restrict__ vfield,
                                                          double2* __restrict__ out) {
  __shared__ float4 s_k[kThreads];
  __shared__ float2 s_d[kThreads];
  __shared__ float s_w0[kThreads];
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  const long long v = blockIdx.x * (long long)kThreads + threadIdx.x;
  const bool active = v < V;
  const float r2 = g.o2 + float(v % g.n2), r1 = g.o1 + float((v / g.n2) % g.n1),
              r0 = g.o0 + float(v / ((long long)g.n2 * g.n1));
  const float4 vf = active ? vfield[v] : make_float4(0, 0, 0, 0);
  double tr = 0.0, ti = 0.0;
  long long begin, end;
  segment(M, begin, end);
  for (long long base = begin; base < end; base += kThreads) {
    __syncthreads();
    if (base + threadIdx.x < end) {
      const float4 k = smp[base + threadIdx.x];
      s_k[threadIdx.x] = k;
      s_d[threadIdx.x] = d[base + threadIdx.x];
      if constexpr (GRADS) s_w0[threadIdx.x] = sinc_product<FAST>(k.x, k.y, k.z);
    }
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    for (int j = 0; j < len; ++j) {
      float c, s, w;
      field_term<FAST, GRADS>(s_k[j], r0, r1, r2, vf, GRADS ? s_w0[j] : 1.0f, c, s, w);
      const float2 dv = s_d[j];
      tr += double(w * (dv.x * c - dv.y * s));
      ti += double(w * (dv.x * s + dv.y * c));
    }
  }
  if (active) out[blockIdx.y * V + v] = make_double2(tr, ti);
}

// Field model, forward: one sample per thread, voxels (value, fm, g) staged in tiles.
template <bool FAST, bool GRADS>
__global__ void __launch_bounds__(kThreads) forward_field(const float4* __restrict__ smp, const float2* __restrict__ x,
                                                          int M, GridArgs g, const float4* __restrict__ vfield,
                                                          double2* __restrict__ out) {
  __shared__ float2 s_x[kThreads];
  __shared__ float4 s_f[kThreads];
  __shared__ float4 s_r[kThreads];
  const int i = blockIdx.x * kThreads + threadIdx.x;
  const float4 k = i < M ? smp[i] : make_float4(0, 0, 0, 0);
  const float w0 = GRADS ? sinc_product<FAST>(k.x, k.y, k.z) : 1.0f;
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  double tr = 0.0, ti = 0.0;
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
    for (int j = 0; j < len; ++j) {
      const float4 r = s_r[j];
      float c, s, w;
      field_term<FAST, GRADS>(k, r.x, r.y, r.z, s_f[j], w0, c, s, w);
      const float2 xv = s_x[j];  // x exp(-i phase)
      tr += double(w * (xv.x * c + xv.y * s));
      ti += double(w * (xv.y * c - xv.x * s));
    }
  }
  if (i < M) out[blockIdx.y * (long long)M + i] = make_double2(tr, ti);
}

// Gradients without an off-resonance map (fm = 0 everywhere, as in seed 001's data): the phase is k . r again, so
// the row recurrence of the field-free kernels applies, and the voxels without gradients (most of an image) use
// the sample's own sinc product w0. Runs of kGradRun voxels per thread (adjoint) or per step (forward); terms
// are added in double as in the general field kernels.
constexpr int kGradRun = 8;
constexpr int kGradRunAdjoint = 8;  // (4 measured 0.07 ms instead of 0.085 but CG on seed 001 drifted to 1.1e-4)

// The adjoint gives each warp one run of kGradRun voxels and its lanes every 32nd sample, so that whether a
// voxel needs its own sinc terms is the same for the whole warp (no divergence); a warp reduction ends it.
template <bool FAST>
__global__ void __launch_bounds__(kThreads) adjoint_grad_runs(const float4* __restrict__ smp, const float2* __restrict__ d,
                                                              int M, GridArgs g, const float4* __restrict__ vfield,
                                                              double2* __restrict__ out) {
  __shared__ float4 s_k[kThreads];
  __shared__ float4 s_d[kThreads];  // d, w0, unused
  __shared__ float2 s_step[kThreads];
  const int lane = threadIdx.x & 31;
  const long long runs = (g.n2 + kGradRunAdjoint - 1) / kGradRunAdjoint;
  const long long warp = (blockIdx.x * (long long)kThreads + threadIdx.x) >> 5;
  const bool active = warp < (long long)g.n0 * g.n1 * runs;
  const int c = int(warp % runs);
  const long long row = warp / runs;
  const int i1 = int(row % g.n1), i0 = int(row / g.n1);
  const float r0 = g.o0 + float(i0), r1 = g.o1 + float(i1), r2 = g.o2 + float(c * kGradRunAdjoint);
  float gx[kGradRunAdjoint], gy[kGradRunAdjoint], gz[kGradRunAdjoint];
  bool plain[kGradRunAdjoint];
  double tr[kGradRunAdjoint], ti[kGradRunAdjoint];
#pragma unroll
  for (int q = 0; q < kGradRunAdjoint; ++q) {
    float4 f = make_float4(0, 0, 0, 0);
    if (active && c * kGradRunAdjoint + q < g.n2) f = vfield[row * g.n2 + c * kGradRunAdjoint + q];
    gx[q] = f.y;
    gy[q] = f.z;
    gz[q] = f.w;
    plain[q] = f.y == 0.0f && f.z == 0.0f && f.w == 0.0f;
    tr[q] = ti[q] = 0.0;
  }
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
      s_d[threadIdx.x] = make_float4(dv.x, dv.y, sinc_product<FAST>(k.x, k.y, k.z), 0.0f);
      s_step[threadIdx.x] = make_float2(sc, ss);
    }
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    for (int j = lane; j < len; j += 32) {
      const float4 k = s_k[j];
      const float4 dd = s_d[j];
      const float2 st = s_step[j];
      float e = 0.0f;
      float f = frac_prod(k.x, r0, e) + frac_prod(k.y, r1, e) + frac_prod(k.z, r2, e);
      f += e;
      f -= rintf(f);
      float er, ei;
      cis<FAST>(f, er, ei);
#pragma unroll
      for (int q = 0; q < kGradRunAdjoint; ++q) {
        const float w = plain[q] ? dd.z
                                 : sinc_product<FAST>(fmaf(k.w, gx[q], k.x), fmaf(k.w, gy[q], k.y),
                                                      fmaf(k.w, gz[q], k.z));
        tr[q] += double(w * (dd.x * er - dd.y * ei));
        ti[q] += double(w * (dd.x * ei + dd.y * er));
        const float nr = er * st.x - ei * st.y;
        ei = fmaf(er, st.y, ei * st.x);
        er = nr;
      }
    }
  }
#pragma unroll
  for (int q = 0; q < kGradRunAdjoint; ++q)
    for (int o = 16; o > 0; o >>= 1) {
      tr[q] += __shfl_down_sync(0xffffffffu, tr[q], o);
      ti[q] += __shfl_down_sync(0xffffffffu, ti[q], o);
    }
  if (!active || lane != 0) return;
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  double2* o = out + blockIdx.y * V + row * g.n2 + c * kGradRunAdjoint;
#pragma unroll
  for (int q = 0; q < kGradRunAdjoint; ++q)
    if (c * kGradRunAdjoint + q < g.n2) o[q] = make_double2(tr[q], ti[q]);
}

template <bool FAST>
__global__ void __launch_bounds__(kThreads) forward_grad_runs(const float4* __restrict__ smp, const float2* __restrict__ x,
                                                              int M, GridArgs g, const float4* __restrict__ vfield,
                                                              double2* __restrict__ out) {
  __shared__ float2 s_x[kThreads];
  __shared__ float4 s_f[kThreads];
  const int i = blockIdx.x * kThreads + threadIdx.x;
  const float4 k = i < M ? smp[i] : make_float4(0, 0, 0, 0);
  const float w0 = sinc_product<FAST>(k.x, k.y, k.z);
  float sc, ss;
  cis<FAST>(k.z - rintf(k.z), sc, ss);
  ss = -ss;  // exp(-2 pi i k2)
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  double tr = 0.0, ti = 0.0;
  long long begin, end;
  segment(V, begin, end);
  for (long long base = begin; base < end; base += kThreads) {
    __syncthreads();
    if (base + threadIdx.x < end) {
      s_x[threadIdx.x] = x[base + threadIdx.x];
      s_f[threadIdx.x] = vfield[base + threadIdx.x];
    }
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    int i2 = int(base % g.n2);
    const long long row = base / g.n2;
    int i1 = int(row % g.n1), i0 = int(row / g.n1);
    for (int j = 0; j < len;) {
      const int run = min(kGradRun, min(len - j, g.n2 - i2));
      float e = 0.0f;
      float f = frac_prod(k.x, g.o0 + float(i0), e) + frac_prod(k.y, g.o1 + float(i1), e) +
                frac_prod(k.z, g.o2 + float(i2), e);
      f += e;
      f -= rintf(f);
      float er, ei;
      cis<FAST>(f, er, ei);
      ei = -ei;
#pragma unroll
      for (int q = 0; q < kGradRun; ++q) {
        if (q < run) {
          const float2 xv = s_x[j + q];
          const float4 vf = s_f[j + q];
          const float w = (vf.y == 0.0f && vf.z == 0.0f && vf.w == 0.0f)
                              ? w0
                              : sinc_product<FAST>(fmaf(k.w, vf.y, k.x), fmaf(k.w, vf.z, k.y), fmaf(k.w, vf.w, k.z));
          tr += double(w * (xv.x * er - xv.y * ei));
          ti += double(w * (xv.x * ei + xv.y * er));
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
  }
  if (i < M) out[blockIdx.y * (long long)M + i] = make_double2(tr, ti);
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

__global__ void sum_partials_double(const double2* __restrict__ part, int S, long long n, float2* __restrict__ out) {
  const long long o = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (o >= n) return;
  double2 a = part[o];
  for (int s = 1; s < S; ++s) {
    const double2 b = part[s * n + o];
    a.x += b.x;
    a.y += b.y;
  }
  out[o] = make_float2(float(a.x), float(a.y));
}

// Q(-s) = conj(Q(s)) for real weights: Q was computed for s_a >= 0 along axis a (the half grid, n_a points:
// 0..n_a-1); the full 2N grid gets the rest by symmetry. Displacements of -n along any axis never enter the
// convolution (|i - i'| <= n - 1) and are set to 0.
struct QMirror {
  long long q[3];   // the 2N grid's extents
  long long n[3];   // the image grid's (1 where the axis has one voxel)
  long long h[3];   // the half grid's extents
  int axis;
};

__global__ void q_mirror(const float2* __restrict__ half, QMirror m, float2* __restrict__ out) {
  const long long L = m.q[0] * m.q[1] * m.q[2], j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j >= L) return;
  long long idx[3] = {j / (m.q[1] * m.q[2]), (j / m.q[2]) % m.q[1], j % m.q[2]};
  long long sd[3];
  bool edge = false;
  for (int a = 0; a < 3; ++a) {
    sd[a] = m.q[a] > 1 ? idx[a] - m.n[a] : 0;  // the displacement
    if (m.q[a] > 1 && sd[a] == -m.n[a]) edge = true;
  }
  float2 v = make_float2(0.0f, 0.0f);
  if (edge) {
  } else if (sd[m.axis] >= 0) {
    long long hi[3];
    for (int a = 0; a < 3; ++a) hi[a] = a == m.axis ? sd[a] : idx[a];
    v = half[(hi[0] * m.h[1] + hi[1]) * m.h[2] + hi[2]];
  } else {
    long long hi[3];
    for (int a = 0; a < 3; ++a) hi[a] = a == m.axis ? -sd[a] : (m.q[a] > 1 ? m.n[a] - sd[a] : 0);
    const float2 w = half[(hi[0] * m.h[1] + hi[1]) * m.h[2] + hi[2]];
    v = make_float2(w.x, -w.y);
  }
  out[j] = v;
}

__global__ void real_to_complex(const float* __restrict__ w, int M, float2* __restrict__ out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < M) out[i] = make_float2(w ? w[i] : 1.0f, 0.0f);
}

// How many ways to split a sum of `terms` (in parts of kSegment) so that threads * ways reaches kTargetThreads.
int split_for(long long threads, long long terms) {
  const long long units = (terms + kSegment - 1) / kSegment;
  const long long want = (kTargetThreads + threads - 1) / std::max(1LL, threads);
  return int(std::clamp(want, 1LL, std::max(1LL, std::min(units, 4096LL))));
}

unsigned blocks(long long threads) { return unsigned((threads + kThreads - 1) / kThreads); }

}  // namespace

struct ExactDeviceModel {
  ExactGrid grid, qgrid, qhalf;  // qhalf: qgrid with displacements >= 0 only along qaxis
  int qaxis = 0;
  DeviceBuffer<cfloat> qhalf_values;
  int M = 0;
  bool field = false, grads = false;
  bool grads_only = false;  // gradients and fm = 0 everywhere: the row-recurrence kernels
  int split_grad_adjoint = 1;
  DeviceBuffer<float4> samples;  // k0, k1, k2, t
  DeviceBuffer<float4> vfield;   // fm, g0, g1, g2 (field only)
  DeviceBuffer<cfloat> weights;  // Q's sample weights as complex data
  DeviceBuffer<cfloat> partials;
  DeviceBuffer<double2> field_partials;  // the field kernels' sums, always (then reduced to float)
  int split_adjoint = 1, split_forward = 1, split_q = 1;
  // A trajectory symmetric about k = 0: P pairs (i, j) with k_j = -k_i, their k, and the paired data.
  int P = 0;
  DeviceBuffer<int2> pairs;
  DeviceBuffer<float4> pair_samples, pair_values;
};

namespace {

// Pairs every sample with the one at -k (bit-exact). Empty unless every sample has a partner.
std::vector<std::pair<int, int>> symmetric_pairs(const ExactModel& m) {
  struct Key {
    float a, b, c;
    bool operator==(const Key& o) const { return a == o.a && b == o.b && c == o.c; }
  };
  struct Hash {
    std::size_t operator()(const Key& k) const {
      std::uint32_t u[3];
      std::memcpy(u, &k, sizeof u);
      return (std::size_t(u[0]) * 0x9E3779B97F4A7C15ULL) ^ (std::size_t(u[1]) * 0xC2B2AE3D27D4EB4FULL) ^ u[2];
    }
  };
  const std::size_t M = m.samples();
  std::unordered_multimap<Key, int, Hash> at;
  at.reserve(M);
  for (std::size_t i = 0; i < M; ++i) at.emplace(Key{m.k[0][i], m.k[1][i], m.k[2][i]}, int(i));
  std::vector<char> used(M, 0);
  std::vector<std::pair<int, int>> pairs;
  pairs.reserve(M / 2);
  for (std::size_t i = 0; i < M; ++i) {
    if (used[i]) continue;
    const Key neg{-m.k[0][i], -m.k[1][i], -m.k[2][i]};
    int partner = -1;
    auto [lo, hi] = at.equal_range(neg);
    for (auto it = lo; it != hi; ++it)
      if (!used[it->second] && std::size_t(it->second) != i) {
        partner = it->second;
        break;
      }
    if (partner < 0) return {};
    used[i] = used[partner] = 1;
    pairs.emplace_back(int(i), partner);
  }
  return pairs;
}

}  // namespace

ExactOperatorCuda::ExactOperatorCuda(const ExactModel& model, bool fast, gpu::StreamRef stream)
    : LinearOperator(Extents{std::size_t(model.grid.n[0]), std::size_t(model.grid.n[1]), std::size_t(model.grid.n[2])},
                     Extents{model.samples()}, Location::Device),
      stream_(stream),
      fast_(fast) {
  const ExactModel m = model.filled();
  auto dm = std::make_unique<ExactDeviceModel>();
  dm->grid = m.grid;
  dm->qgrid = m.grid.q_grid();
  dm->qhalf = dm->qgrid;
  while (dm->qaxis < 2 && m.grid.n[dm->qaxis] <= 1) ++dm->qaxis;
  dm->qhalf.n[dm->qaxis] = m.grid.n[dm->qaxis];
  dm->qhalf.origin[dm->qaxis] = 0.0;
  const std::size_t M = m.samples(), V = m.voxels();
  if (M > std::size_t(1) << 30) throw InputError("exact model: " + std::to_string(M) + " samples is too many");
  dm->M = int(M);
  dm->field = m.has_field();
  dm->grads = m.has_gradients();
  std::vector<float4> h(M);
  for (std::size_t i = 0; i < M; ++i) h[i] = make_float4(m.k[0][i], m.k[1][i], m.k[2][i], m.t.empty() ? 0.0f : m.t[i]);
  dm->samples = DeviceBuffer<float4>(Extents{M});
  gpu::copy_to_device(dm->samples.data(), h.data(), M * sizeof(float4), stream);
  if (!dm->field) {
    const auto pairs = symmetric_pairs(m);
    if (!pairs.empty()) {
      dm->P = int(pairs.size());
      std::vector<int2> hp(pairs.size());
      std::vector<float4> hk(pairs.size());
      for (std::size_t p = 0; p < pairs.size(); ++p) {
        hp[p] = make_int2(pairs[p].first, pairs[p].second);
        hk[p] = h[std::size_t(pairs[p].first)];
      }
      dm->pairs = DeviceBuffer<int2>(Extents{hp.size()});
      dm->pair_samples = DeviceBuffer<float4>(Extents{hk.size()});
      dm->pair_values = DeviceBuffer<float4>(Extents{hk.size()});
      gpu::copy_to_device(dm->pairs.data(), hp.data(), hp.size() * sizeof(int2), stream);
      gpu::copy_to_device(dm->pair_samples.data(), hk.data(), hk.size() * sizeof(float4), stream);
      gpu::synchronize(stream);
    }
  }
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
  const ExactGrid& q = dm->qhalf;
  const std::size_t Meff = dm->P ? std::size_t(dm->P) : M;  // the sums' length (pairs count once)
  dm->split_adjoint = split_for(adj_threads, dm->field ? M : Meff);
  dm->split_forward = split_for((long long)M, (long long)V);
  dm->split_q = split_for((long long)q.n[0] * q.n[1] * ((q.n[2] + kRun - 1) / kRun), Meff);
  const std::size_t part = std::max({dm->split_adjoint > 1 ? dm->split_adjoint * V : 0,
                                     dm->split_forward > 1 ? dm->split_forward * M : 0,
                                     dm->split_q > 1 ? dm->split_q * q.voxels() : 0});
  if (part) dm->partials = DeviceBuffer<cfloat>(Extents{part});
  if (dm->field) {
    dm->grads_only = dm->grads && std::all_of(m.fm.begin(), m.fm.end(), [](float v) { return v == 0.0f; });
    dm->split_grad_adjoint =
        split_for(32LL * m.grid.n[0] * m.grid.n[1] * ((m.grid.n[2] + kGradRunAdjoint - 1) / kGradRunAdjoint), M);
    dm->field_partials = DeviceBuffer<double2>(Extents{std::max(
        {std::size_t(dm->split_adjoint) * V, std::size_t(dm->split_forward) * M, std::size_t(dm->split_grad_adjoint) * V})});
  }
  dm->weights = DeviceBuffer<cfloat>(Extents{M});
  dm->qhalf_values = DeviceBuffer<cfloat>(Extents{dm->qhalf.voxels()});
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

// real_q: Q with unit weights on a symmetric trajectory (its imaginary part is 0).
template <bool FAST>
void launch_adjoint(ExactDeviceModel& dm, const ExactGrid& grid, int split, const float2* d, float2* x,
                    cudaStream_t s, bool real_q = false) {
  const GridArgs g = grid_args(grid);
  float2* out = split > 1 ? reinterpret_cast<float2*>(dm.partials.data()) : x;
  const long long V = (long long)grid.voxels();
  if (!dm.field || &grid == &dm.qhalf) {
    const long long threads = (long long)g.n0 * g.n1 * ((g.n2 + kRun - 1) / kRun);
    const dim3 grid_dim(blocks(threads), unsigned(split));
    if (dm.P) {
      pair_data<<<blocks(dm.P), kThreads, 0, s>>>(d, dm.pairs.data(), dm.P, dm.pair_values.data());
      CUDA_CHECK_LAUNCH("exact pair_data");
      if (real_q)
        adjoint_plain<FAST, true, true><<<grid_dim, kThreads, 0, s>>>(dm.pair_samples.data(), dm.pair_values.data(),
                                                                      dm.P, g, out);
      else
        adjoint_plain<FAST, true><<<grid_dim, kThreads, 0, s>>>(dm.pair_samples.data(), dm.pair_values.data(), dm.P,
                                                                g, out);
    } else {
      adjoint_plain<FAST, false><<<grid_dim, kThreads, 0, s>>>(dm.samples.data(), d, dm.M, g, out);
    }
  } else {
    double2* part = dm.field_partials.data();
    if (dm.grads_only) {
      const long long threads = 32LL * g.n0 * g.n1 * ((g.n2 + kGradRunAdjoint - 1) / kGradRunAdjoint);  // a warp per run
      adjoint_grad_runs<FAST><<<dim3(blocks(threads), unsigned(dm.split_grad_adjoint)), kThreads, 0, s>>>(
          dm.samples.data(), d, dm.M, g, dm.vfield.data(), part);
      CUDA_CHECK_LAUNCH("exact adjoint (gradient runs)");
      sum_partials_double<<<blocks(V), kThreads, 0, s>>>(part, dm.split_grad_adjoint, V, x);
      CUDA_CHECK_LAUNCH("exact sum_partials_double");
      return;
    }
    if (dm.grads)
      adjoint_field<FAST, true><<<dim3(blocks(V), unsigned(split)), kThreads, 0, s>>>(dm.samples.data(), d, dm.M, g,
                                                                                       dm.vfield.data(), part);
    else
      adjoint_field<FAST, false><<<dim3(blocks(V), unsigned(split)), kThreads, 0, s>>>(dm.samples.data(), d, dm.M, g,
                                                                                        dm.vfield.data(), part);
    CUDA_CHECK_LAUNCH("exact adjoint (field)");
    sum_partials_double<<<blocks(V), kThreads, 0, s>>>(part, split, V, x);
    CUDA_CHECK_LAUNCH("exact sum_partials_double");
    return;
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
  if (dm.field) {
    double2* part = dm.field_partials.data();
    if (dm.grads_only)
      forward_grad_runs<FAST><<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, dm.vfield.data(), part);
    else if (dm.grads)
      forward_field<FAST, true><<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, dm.vfield.data(), part);
    else
      forward_field<FAST, false><<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, dm.vfield.data(), part);
    CUDA_CHECK_LAUNCH("exact forward (field)");
    sum_partials_double<<<blocks(dm.M), kThreads, 0, s>>>(part, split, dm.M, d);
    CUDA_CHECK_LAUNCH("exact sum_partials_double");
    return;
  }
  forward_plain<FAST><<<grid, kThreads, 0, s>>>(dm.samples.data(), x, dm.M, g, out);
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
  auto* half = reinterpret_cast<float2*>(dm_->qhalf_values.data());
  const bool real_q = d_w == nullptr && dm_->P > 0;
  fast_ ? launch_adjoint<true>(*dm_, dm_->qhalf, dm_->split_q, w, half, s, real_q)
        : launch_adjoint<false>(*dm_, dm_->qhalf, dm_->split_q, w, half, s, real_q);
  QMirror mi{};
  for (int a = 0; a < 3; ++a) {
    mi.q[a] = dm_->qgrid.n[a];
    mi.n[a] = dm_->grid.n[a];
    mi.h[a] = dm_->qhalf.n[a];
  }
  mi.axis = dm_->qaxis;
  q_mirror<<<blocks((long long)dm_->qgrid.voxels()), kThreads, 0, s>>>(half, mi, reinterpret_cast<float2*>(d_q));
  CUDA_CHECK_LAUNCH("exact q_mirror");
}

}  // namespace radstream
