// The field model's kernels (seed 001): every pair in full, or row runs when there is no off-resonance map.
// Included by exact_cuda.cu only (one translation unit); everything here is internal to it.
#pragma once
#include <cuda_runtime.h>

#include "exact/exact_kernels_common.cuh"

namespace radstream {
namespace {

// The field model's pair term: phase (cycles, reduced) and the sinc weight (one division for the three).
template <bool FAST, bool GRADS>
__device__ __forceinline__ void field_term(const float4& k, float r0, float r1, float r2, const float4& vf,
                                           float w0, float& c, float& s, float& w) {
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
// Every term is added in double: the field model's sums cancel heavily and CG amplifies what float loses
// there.
template <bool FAST, bool GRADS>
__global__ void __launch_bounds__(kThreads)
    adjoint_field(const float4* __restrict__ smp, const float2* __restrict__ d, int M, GridArgs g,
                  const float4* __restrict__ vfield, double2* __restrict__ out) {
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
__global__ void __launch_bounds__(kThreads)
    forward_field(const float4* __restrict__ smp, const float2* __restrict__ x, int M, GridArgs g,
                  const float4* __restrict__ vfield, double2* __restrict__ out) {
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
      s_r[threadIdx.x] = make_float4(g.o0 + float(v / ((long long)g.n2 * g.n1)),
                                     g.o1 + float((v / g.n2) % g.n1), g.o2 + float(v % g.n2), 0.0f);
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

// Gradients without an off-resonance map (fm = 0 everywhere, as in seed 001's data): the phase is k . r
// again, so the row recurrence of the field-free kernels applies, and the voxels without gradients (most of
// an image) use the sample's own sinc product w0. Runs of kGradRun voxels per thread (adjoint) or per step
// (forward). The terms of a run (forward: at most 8 voxels) or of a lane's share of a staged chunk (adjoint:
// at most 8 samples) are summed in float and those short sums added in double (a double add per term made the
// conversions and DADDs, not the trig, the bound).
constexpr int kGradRun = 8;
constexpr int kGradRunAdjoint =
    8;  // (4: 20 % faster, but CG on seed 001 drifts: 5.4e-5 accurate, 9.0e-4 fast trig)

// The adjoint gives each warp one run of kGradRun voxels and its lanes every 32nd sample, so that whether a
// voxel needs its own sinc terms is the same for the whole warp (no divergence); a warp reduction ends it.
template <bool FAST>
__global__ void __launch_bounds__(kThreads)
    adjoint_grad_runs(const float4* __restrict__ smp, const float2* __restrict__ d, int M, GridArgs g,
                      const float4* __restrict__ vfield, double2* __restrict__ out) {
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
    float fr[kGradRunAdjoint], fi[kGradRunAdjoint];  // this chunk's (at most 8 samples a lane) sums
#pragma unroll
    for (int q = 0; q < kGradRunAdjoint; ++q) fr[q] = fi[q] = 0.0f;
    for (int j = lane; j < len; j += 32) {
      const float4 k = s_k[j];
      const float4 dd = s_d[j];
      const float2 st = s_step[j];
      const float f = reduced_phase(k, r0, r1, r2);
      float er, ei;
      cis<FAST>(f, er, ei);
#pragma unroll
      for (int q = 0; q < kGradRunAdjoint; ++q) {
        const float w = plain[q] ? dd.z
                                 : sinc_product<FAST>(fmaf(k.w, gx[q], k.x), fmaf(k.w, gy[q], k.y),
                                                      fmaf(k.w, gz[q], k.z));
        fr[q] += w * (dd.x * er - dd.y * ei);
        fi[q] += w * (dd.x * ei + dd.y * er);
        const float nr = er * st.x - ei * st.y;
        ei = fmaf(er, st.y, ei * st.x);
        er = nr;
      }
    }
#pragma unroll
    for (int q = 0; q < kGradRunAdjoint; ++q) {
      tr[q] += double(fr[q]);
      ti[q] += double(fi[q]);
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
__global__ void __launch_bounds__(kThreads)
    forward_grad_runs(const float4* __restrict__ smp, const float2* __restrict__ x, int M, GridArgs g,
                      const float4* __restrict__ vfield, double2* __restrict__ out) {
  __shared__ float2 s_x[kThreads];
  __shared__ float4 s_f[kThreads];
  const int i = blockIdx.x * kThreads + threadIdx.x;
  float sc, ss;
  const float4 k = forward_sample<FAST>(smp, i, M, sc, ss);
  const float w0 = sinc_product<FAST>(k.x, k.y, k.z);
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
    forward_tile<FAST, kGradRun>(
        k, sc, ss, s_x, len, base, g,
        [&](int j) {
          const float4 vf = s_f[j];
          return (vf.y == 0.0f && vf.z == 0.0f && vf.w == 0.0f)
                     ? w0
                     : sinc_product<FAST>(fmaf(k.w, vf.y, k.x), fmaf(k.w, vf.z, k.y), fmaf(k.w, vf.w, k.z));
        },
        [&](float fr, float fi) {  // each run's float sum added in double
          tr += double(fr);
          ti += double(fi);
        });
  }
  if (i < M) out[blockIdx.y * (long long)M + i] = make_double2(tr, ti);
}

}  // namespace
}  // namespace radstream
