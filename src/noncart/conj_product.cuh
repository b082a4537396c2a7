// Complex products of the SENSE operator's coil sums on the GPU: s += conj(m) v in float (the frame path) or
// in double with exact products (the coil split's sums, added across GPUs in double so that no split changes
// the rounded result). Included only by .cu files.
#pragma once
#include <cuda_runtime.h>

namespace radstream::conjprod {

__device__ __forceinline__ float2 cmul(float2 a, float2 b) {
  return make_float2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}
__device__ __forceinline__ float2 cmul_conj(float2 a, float2 b) {  // conj(a) b
  return make_float2(a.x * b.x + a.y * b.y, a.x * b.y - a.y * b.x);
}
__device__ __forceinline__ void add_conj_product(float2& s, float2 m, float2 v) {
  const float2 p = cmul_conj(m, v);
  s.x += p.x;
  s.y += p.y;
}
__device__ __forceinline__ void add_conj_product(double2& s, float2 m, float2 v) {
  s.x = fma(double(m.x), double(v.x), fma(double(m.y), double(v.y), s.x));
  s.y = fma(double(m.x), double(v.y), fma(-double(m.y), double(v.x), s.y));
}
__device__ __forceinline__ void add(float2& s, float2 v) {
  s.x += v.x;
  s.y += v.y;
}
__device__ __forceinline__ void add(double2& s, double2 v) {
  s.x += v.x;
  s.y += v.y;
}

}  // namespace radstream::conjprod
