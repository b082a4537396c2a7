// The field-free kernels of the exact sums: F^H d and Q (phasor runs, symmetric pairs) and F.
// Included by exact_cuda.cu only (one translation unit); everything here is internal to it.
#pragma once
#include <cuda_runtime.h>

#include "exact/exact_kernels_common.cuh"

namespace radstream {
namespace {

// x_v = sum_m d_m exp(+2 pi i k_m . r_v): a run of kRun voxels along axis 2 per thread. PAIRED: a trajectory
// symmetric about k = 0 (seed 000's): each entry stands for k and -k, data {A, B, C, D} from the pair's
// values d1 (at k) and d2 (at -k) as A = Re d1 + Re d2, B = Im d1 - Im d2, C = Im d1 + Im d2, D = Re d1 - Re
// d2, so that d1 e + d2 conj(e) = (A Re e - B Im e) + i (C Re e + D Im e): one phasor and four FMAs per voxel
// for two samples (for Q with real weights B = C = 0 and the imaginary part is exactly 0 when D = 0). REAL
// (paired, for Q with pairs of equal real weights): only the real part is formed (it is all there is).
template <bool FAST, bool PAIRED, bool REAL = false>
__global__ void __launch_bounds__(kThreads)
    adjoint_plain(const float4* __restrict__ smp, const void* __restrict__ data, int M, GridArgs g,
                  float2* __restrict__ out) {
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
      const float f = reduced_phase(k, r0, r1, r2);
      float c0, s0;
      cis<FAST>(f, c0, s0);
      if constexpr (REAL) {
        // Only cosines: the Chebyshev recurrence cos((q+1) d + t) = 2 cos d cos(q d + t) - cos((q-1) d + t),
        // two FMAs a voxel; its rounding grows at most like U_q(cos d) <= q + 1, so a run of kRun stays
        // ~1e-6.
        float cm = c0, cn = c0 * st.x - s0 * st.y;
        const float two_c = 2.0f * st.x;
        pr[0] = fmaf(dd.x, cm, pr[0]);
        pr[1] = fmaf(dd.x, cn, pr[1]);
#pragma unroll
        for (int q = 2; q < kRun; ++q) {
          const float nx = fmaf(two_c, cn, -cm);
          cm = cn;
          cn = nx;
          pr[q] = fmaf(dd.x, cn, pr[q]);
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
__global__ void pair_data(const float2* __restrict__ d, const int2* __restrict__ pairs, int P,
                          float4* __restrict__ out) {
  const int p = blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= P) return;
  const int2 ij = pairs[p];
  const float2 a = d[ij.x], b = d[ij.y];
  out[p] = make_float4(a.x + b.x, a.y - b.y, a.y + b.y, a.x - b.x);
}

// d_m = sum_v x_v exp(-2 pi i k_m . r_v): one sample per thread, voxels staged in tiles and walked in runs of
// kRun along axis 2 (the runs depend on the tile only, so a warp never diverges).
template <bool FAST>
__global__ void __launch_bounds__(kThreads)
    forward_plain(const float4* __restrict__ smp, const float2* __restrict__ x, int M, GridArgs g,
                  float2* __restrict__ out) {
  __shared__ float2 s_x[kThreads];
  const int i = blockIdx.x * kThreads + threadIdx.x;
  float sc, ss;
  const float4 k = forward_sample<FAST>(smp, i, M, sc, ss);
  const long long V = (long long)g.n0 * g.n1 * g.n2;
  float tr = 0.0f, ti = 0.0f;
  long long begin, end;
  segment(V, begin, end);
  for (long long base = begin; base < end; base += kThreads) {
    __syncthreads();
    if (base + threadIdx.x < end) s_x[threadIdx.x] = x[base + threadIdx.x];
    __syncthreads();
    const int len = int(min((long long)kThreads, end - base));
    forward_tile<FAST, kRun>(
        k, sc, ss, s_x, len, base, g, [](int) { return 1.0f; },
        [&](float fr, float fi) {
          tr += fr;
          ti += fi;
        });
  }
  if (i < M) out[blockIdx.y * (long long)M + i] = make_float2(tr, ti);
}

}  // namespace
}  // namespace radstream
