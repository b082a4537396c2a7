// The exact sums' device helpers: tiles, exact-product phases, trig, sinc factors, split sums.
// Included by exact_cuda.cu only (one translation unit); everything here is internal to it.
#pragma once
#include <cuda_runtime.h>

namespace radstream {
namespace {

constexpr int kThreads = 256;  // threads per block, and the length of a shared-memory tile
constexpr int kRun = 16;       // voxels per thread along the fastest axis (the phasor recurrence's run)
constexpr long long kTargetThreads = 1
                                     << 18;  // split the sum across blocks until about this many threads run

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

// The phase k . r in cycles, reduced to [-0.5, 0.5] (k.x, k.y, k.z with the position's three coordinates).
__device__ __forceinline__ float reduced_phase(const float4& k, float r0, float r1, float r2) {
  float e = 0.0f;
  float f = frac_prod(k.x, r0, e) + frac_prod(k.y, r1, e) + frac_prod(k.z, r2, e);
  f += e;
  return f - rintf(f);
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

// Steps a voxel position (i0, i1, i2) on by `run` voxels along axis 2, wrapping into the next row / slice
// (the forward kernels walk a tile of voxels in runs that never cross a row).
__device__ __forceinline__ void advance_row(int& i0, int& i1, int& i2, int run, int n1, int n2) {
  i2 += run;
  if (i2 == n2) {
    i2 = 0;
    if (++i1 == n1) {
      i1 = 0;
      ++i0;
    }
  }
}

// Thread i's sample (zeros past M) and its phasor step (sc, ss) = exp(-2 pi i k2) along axis 2 (the forward
// kernels' row recurrence).
template <bool FAST>
__device__ __forceinline__ float4 forward_sample(const float4* __restrict__ smp, int i, int M, float& sc,
                                                 float& ss) {
  const float4 k = i < M ? smp[i] : make_float4(0, 0, 0, 0);
  cis<FAST>(k.z - rintf(k.z), sc, ss);
  ss = -ss;
  return k;
}

// The forward kernels' walk over one staged tile of voxels [base, base + len) (values in s_x): runs of at
// most RUN voxels along axis 2 that never cross a row, each started by one sincos of the phase k . r and
// stepped by the phasor (sc, ss) = exp(-2 pi i k2) (the row recurrence). weight(j) is tile voxel j's factor
// (1 in the plain model); each run's float sum goes to add(fr, fi), which keeps it in the kernel's
// accumulator.
template <bool FAST, int RUN, class Weight, class Add>
__device__ __forceinline__ void forward_tile(const float4& k, float sc, float ss, const float2* s_x, int len,
                                             long long base, const GridArgs& g, Weight weight, Add add) {
  int i2 = int(base % g.n2);
  const long long row = base / g.n2;
  int i1 = int(row % g.n1), i0 = int(row / g.n1);
  for (int j = 0; j < len;) {
    const int run = min(RUN, min(len - j, g.n2 - i2));
    const float f = reduced_phase(k, g.o0 + float(i0), g.o1 + float(i1), g.o2 + float(i2));
    float er, ei;
    cis<FAST>(f, er, ei);
    ei = -ei;
    float fr = 0.0f, fi = 0.0f;
#pragma unroll
    for (int q = 0; q < RUN; ++q) {
      if (q < run) {
        const float2 xv = s_x[j + q];
        const float w = weight(j + q);
        fr += w * (xv.x * er - xv.y * ei);
        fi += w * (xv.x * ei + xv.y * er);
        const float nr = er * sc - ei * ss;
        ei = fmaf(er, ss, ei * sc);
        er = nr;
      }
    }
    add(fr, fi);
    j += run;
    advance_row(i0, i1, i2, run, g.n1, g.n2);
  }
}

constexpr int kSegment = 32;  // a split sum's parts are whole multiples of this many terms

// The range of samples (adjoint) or voxels (forward) of block row blockIdx.y when the sum is split.
__device__ __forceinline__ void segment(long long count, long long& begin, long long& end) {
  const long long units = (count + kSegment - 1) / kSegment;
  const long long per = (units + gridDim.y - 1) / gridDim.y;
  begin = min(count, blockIdx.y * per * kSegment);
  end = min(count, (blockIdx.y + 1) * per * kSegment);
}

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

}  // namespace
}  // namespace radstream
