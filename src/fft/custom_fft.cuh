// The custom GPU FFT: batched power-of-two 1D transforms (64..2048 points) computed by one thread block in
// shared memory, radix-8 Stockham autosort passes (then one radix-2 or radix-4 pass), the butterflies in
// registers. Stockham pass with radix R over sub-transforms of length Ns (Ns = 1, R, R^2, ...):
//   for j in [0, N/R): k = j mod Ns; v_r = x[j + r N/R] * w^(r k N/(Ns R)), r < R; V = DFT_R(v);
//                      y[(j - k) R + k + r Ns] = V_r
// with w = exp(-+2 pi i / N) from a table (computed in double on the host). No bit reversal is needed.
//
// A block holds TB transforms of N points; each transform is worked by T = N / E threads holding E elements
// each. The first pass reads its inputs straight from global memory and the last writes its outputs
// straight back through a caller's functor: this is what lets the fused chain crop, deapodize and combine
// as it stores, and it saves two shared-memory round trips.
// Included only by .cu files.
#pragma once
#include <cuda_runtime.h>

#include "fft/twiddle_table.hpp"

namespace radstream::customfft {

__device__ __forceinline__ float2 add(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ float2 sub(float2 a, float2 b) {
  return make_float2(a.x - b.x, a.y - b.y);
}
__device__ __forceinline__ float2 mul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
// Multiplies by s*i, s = +1 for the inverse (exp(+...)) and -1 for the forward transform.
template <bool INV>
__device__ __forceinline__ float2 mul_si(float2 a) {
  return INV ? make_float2(-a.y, a.x) : make_float2(a.y, -a.x);
}

template <bool INV>
__device__ __forceinline__ void dft2(float2& a0, float2& a1) {
  const float2 t = a0;
  a0 = add(t, a1);
  a1 = sub(t, a1);
}

template <bool INV>
__device__ __forceinline__ void dft4(float2& a0, float2& a1, float2& a2, float2& a3) {
  const float2 e0 = add(a0, a2), e1 = sub(a0, a2), o0 = add(a1, a3), o1 = mul_si<INV>(sub(a1, a3));
  a0 = add(e0, o0);
  a2 = sub(e0, o0);
  a1 = add(e1, o1);
  a3 = sub(e1, o1);
}

// In natural order: v[k] <- sum_n v[n] exp(s 2 pi i n k / 8).
template <bool INV>
__device__ __forceinline__ void dft8(float2* v) {
  float2 e0 = v[0], e1 = v[2], e2 = v[4], e3 = v[6];
  float2 o0 = v[1], o1 = v[3], o2 = v[5], o3 = v[7];
  dft4<INV>(e0, e1, e2, e3);
  dft4<INV>(o0, o1, o2, o3);
  constexpr float h = 0.70710678118654752f;
  o1 = mul(o1, make_float2(h, INV ? h : -h));
  o2 = mul_si<INV>(o2);
  o3 = mul(o3, make_float2(-h, INV ? h : -h));
  v[0] = add(e0, o0);
  v[4] = sub(e0, o0);
  v[1] = add(e1, o1);
  v[5] = sub(e1, o1);
  v[2] = add(e2, o2);
  v[6] = sub(e2, o2);
  v[3] = add(e3, o3);
  v[7] = sub(e3, o3);
}

template <int R, bool INV>
__device__ __forceinline__ void dft(float2* v) {
  if constexpr (R == 8)
    dft8<INV>(v);
  else if constexpr (R == 4)
    dft4<INV>(v[0], v[1], v[2], v[3]);
  else
    dft2<INV>(v[0], v[1]);
}

// Where element e of a transform lives in shared memory, relative to the transform's base. An access of
// 8-byte elements is served a half-warp at a time, free of bank conflicts when its 16 lanes fall on distinct
// e mod 16; the passes read consecutive e and write at stride R (the first) or in runs of 8 (the second):
//  rows: one transform per warp (or per part of one), e ^ ((e >> 3) & 15) (bits 0-3 swizzled by bits 3-6, a
//        bijection on every aligned block of 128 elements): every pass's reads and writes conflict-free at
//        every size, unpadded. The padding e + e/8 before it served the writes but put two of each
//        half-warp's 16 consecutive reads on one bank (1.5 wavefronts an access at 512 points, a third of the
//        fused tail's row kernel's shared wavefronts in Nsight Compute): R1's tail 0.0530 -> 0.0521 ms on an
//        H200;
//  columns: TB transforms side by side, e * TB + (transform), so that the 16 lanes of a half-warp, one per
//        column, touch 16 consecutive elements. (With TB = 8 a half-warp holds two threads whose first-pass
//        writes share banks; flipping e's bit 0 by its bit 3 removed that conflict but made the fused tail's
//        columns kernel slower: the tail 0.0528 -> 0.0550 ms with both layouts swizzled.)
struct RowLayout {
  __host__ __device__ static constexpr int stride(int n) { return n; }
  __device__ static __forceinline__ int at(int e) { return e ^ ((e >> 3) & 15); }
};
template <int TB>
struct ColLayout {
  __device__ static __forceinline__ int at(int e) { return e * TB; }
};

// One Stockham pass of radix R on the transform at st, by thread tid of T = N / E. The first pass reads the
// input with load(e) and the last one hands the output to store(e, v) (both straight from and to registers,
// each element exactly once); the passes between use shared memory.
// tw: twiddle_table(N), pass (Ns, R)'s factors exp(-2 pi i r k / (Ns R)) at Ns - 1 + (r - 1) Ns + k
// (conjugated here for the inverse).
template <int N, int E, int R, bool INV, bool FIRST, bool LAST, class L, class Load, class Store>
__device__ __forceinline__ void pass(float2* st, int tid, int Ns, const float2* __restrict__ tw, Load& load,
                                     Store& store) {
  constexpr int T = N / E, B = E / R;
  float2 v[E];
#pragma unroll
  for (int b = 0; b < B; ++b) {
    const int j = tid + b * T;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const int e = j + r * (N / R);
      if constexpr (FIRST)
        v[b * R + r] = load(e);
      else
        v[b * R + r] = st[L::at(e)];
    }
  }
  if constexpr (!FIRST) __syncthreads();  // all reads done before the in-place writes
#pragma unroll
  for (int b = 0; b < B; ++b) {
    const int j = tid + b * T;
    const int k = j & (Ns - 1);
    if (Ns > 1) {  // the first pass's twiddles are all 1 (Ns is a constant once the passes are unrolled)
#pragma unroll
      for (int r = 1; r < R; ++r) {
        float2 w = __ldg(tw + (Ns - 1) + (r - 1) * Ns + k);  // exp(-2 pi i r k / (Ns R)), see twiddle_table
        if (INV) w.y = -w.y;
        v[b * R + r] = mul(v[b * R + r], w);
      }
    }
    dft<R, INV>(v + b * R);
    const int d = (j - k) * R + k;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if constexpr (LAST)
        store(d + r * Ns, v[b * R + r]);
      else
        st[L::at(d + r * Ns)] = v[b * R + r];
    }
  }
  if constexpr (!LAST) __syncthreads();
}

// The zero-padded (or cropped) axis convention of the NUFFT's FFT: image index i of an n-point axis sits at
// grid index (i - n/2) mod G (make_axis_apodization). image_index(e, G, n) is the image index at grid index
// e, or -1 for the padding (the crop drops it); the forward head loads by it, the fused tail stores by it.
__host__ __device__ __forceinline__ int image_index(int e, int G, int n) {
  const int h = n / 2;
  return e < n - h ? e + h : (e >= G - h ? e - G + h : -1);
}

__host__ __device__ constexpr int log2i(int n) {
  return n <= 1 ? 0 : 1 + log2i(n / 2);
}

// The passes of one transform of N points: radix-8 passes, then one radix-2 or radix-4 pass. The first pass
// reads its input with load(e), or from st itself (L's layout) when FROM_SHARED.
template <int N, int E, bool INV, class L, bool FROM_SHARED, class Load, class Store>
__device__ __forceinline__ void fft_passes(float2* st, int tid, const float2* __restrict__ tw, Load& load,
                                           Store& store) {
  static_assert(N >= 64 && (N & (N - 1)) == 0 && E >= 8 && N % E == 0, "unsupported FFT shape");
  constexpr int Lg = log2i(N), n8 = Lg / 3, rem = Lg % 3;
  pass<N, E, 8, INV, !FROM_SHARED, false, L>(st, tid, 1, tw, load, store);
  if constexpr (rem == 0) {
#pragma unroll
    for (int i = 1; i < n8 - 1; ++i)
      pass<N, E, 8, INV, false, false, L>(st, tid, 1 << (3 * i), tw, load, store);
    pass<N, E, 8, INV, false, true, L>(st, tid, N / 8, tw, load, store);
  } else {
#pragma unroll
    for (int i = 1; i < n8; ++i) pass<N, E, 8, INV, false, false, L>(st, tid, 1 << (3 * i), tw, load, store);
    constexpr int R = rem == 1 ? 2 : 4;
    pass<N, E, R, INV, false, true, L>(st, tid, N / R, tw, load, store);
  }
}

// The whole transform of N points. load(e) gives input element e; store(e, v) receives output element e;
// every thread of the block must call it (barriers), and it may be called again at once (its last barrier
// follows the last shared-memory read). store may write st itself (L's layout; all reads are done by then).
template <int N, int E, bool INV, class L, class Load, class Store>
__device__ __forceinline__ void fft_transform(float2* st, int tid, const float2* __restrict__ tw, Load load,
                                              Store store) {
  fft_passes<N, E, INV, L, false>(st, tid, tw, load, store);
}

// The transform of the N points already in shared memory at st (L's layout), e.g. what the store of a
// previous transform wrote there; the caller syncs the block between that store and this call.
template <int N, int E, bool INV, class L, class Store>
__device__ __forceinline__ void fft_transform_shared(float2* st, int tid, const float2* __restrict__ tw,
                                                     Store store) {
  auto none = [](int) { return make_float2(0.f, 0.f); };
  fft_passes<N, E, INV, L, true>(st, tid, tw, none, store);
}

// Launch shapes per size: E elements per thread, TB transforms per block.
template <int N>
struct RowShape {
  static constexpr int E = N >= 1024 ? 16 : 8;
  static constexpr int T = N / E;
  static constexpr int TB = T >= 256 ? 1 : 256 / T;
  static constexpr int threads = T * TB;
  static constexpr int smem = TB * RowLayout::stride(N) * 8;
};
// Rows of several transforms side by side in one block, for a sum over them inside the block (over coils):
// TB transforms of N points (1..16, at most 512 threads), E elements a thread as RowShape.
template <int N>
struct SideBySideShape {
  static constexpr int E = RowShape<N>::E;
  static constexpr int T = N / E;
  static constexpr int TB = T >= 512 ? 1 : (512 / T > 16 ? 16 : 512 / T);
  static constexpr int threads = T * TB;
  static constexpr int fft_smem = TB * RowLayout::stride(N) * 8;
};
// Columns: TB_ side by side (ColLayout<TB_>) at E_ elements a thread.
template <int N, int E_, int TB_>
struct ColShapeOf {
  static constexpr int E = E_;
  static constexpr int T = N / E;
  static constexpr int TB = TB_;
  static constexpr int threads = T * TB;
  static constexpr int smem = TB * N * 8;
};
template <int N>
struct ColShape : ColShapeOf<N, N >= 512 ? 16 : 8, N >= 1024 ? 8 : 16> {};

// Calls f.template operator()<N>() for the runtime size n (64..2048); false when n is not supported.
template <class F>
bool dispatch_size(int n, F&& f) {
  switch (n) {
    case 64:
      f.template operator()<64>();
      return true;
    case 128:
      f.template operator()<128>();
      return true;
    case 256:
      f.template operator()<256>();
      return true;
    case 512:
      f.template operator()<512>();
      return true;
    case 1024:
      f.template operator()<1024>();
      return true;
    case 2048:
      f.template operator()<2048>();
      return true;
    default:
      return false;
  }
}

// Whether the engine takes n points (custom_fft_tables.cu).
bool supported(int n);
// Batched 1D transforms of n points (contiguous, one after the other), in place, on `stream` (fft_custom.cu).
void rows_1d(float2* data, long transforms, int n, bool inverse, const float2* tw, cudaStream_t stream);

}  // namespace radstream::customfft
