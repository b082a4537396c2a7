#include "exact/toeplitz_normal.hpp"
#include "gpu/cuda_check.cuh"

namespace radstream {

namespace {

struct Pad {
  int n0, n1, n2;        // the image grid
  long long p0, p1, p2;  // the 2N grid (1 where n = 1)
};

Pad pad_of(const ExactGrid& g) {
  auto p = [&](int a) { return g.n[a] > 1 ? 2LL * g.n[a] : 1LL; };
  return {g.n[0], g.n[1], g.n[2], p(0), p(1), p(2)};
}

// Q (displacements -n..n-1 at index s + n) into the circular layout (s mod 2n), scaled by 1 / L.
__global__ void q_circular(const float2* __restrict__ q, Pad p, float scale, float2* __restrict__ out) {
  const long long L = p.p0 * p.p1 * p.p2, j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j >= L) return;
  const long long j2 = j % p.p2, j1 = (j / p.p2) % p.p1, j0 = j / (p.p2 * p.p1);
  const long long s0 = p.n0 > 1 ? (j0 + p.n0) % p.p0 : 0, s1 = p.n1 > 1 ? (j1 + p.n1) % p.p1 : 0,
                  s2 = p.n2 > 1 ? (j2 + p.n2) % p.p2 : 0;
  const float2 v = q[(s0 * p.p1 + s1) * p.p2 + s2];
  out[j] = make_float2(v.x * scale, v.y * scale);
}

__global__ void pad_image(const float2* __restrict__ x, Pad p, float2* __restrict__ out) {
  const long long L = p.p0 * p.p1 * p.p2, j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j >= L) return;
  const long long j2 = j % p.p2, j1 = (j / p.p2) % p.p1, j0 = j / (p.p2 * p.p1);
  out[j] = (j0 < p.n0 && j1 < p.n1 && j2 < p.n2) ? x[(j0 * p.n1 + j1) * p.n2 + j2] : make_float2(0, 0);
}

__global__ void multiply(float2* __restrict__ a, const float2* __restrict__ b, long long L) {
  const long long j = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (j >= L) return;
  const float2 u = a[j], v = b[j];
  a[j] = make_float2(u.x * v.x - u.y * v.y, u.x * v.y + u.y * v.x);
}

__global__ void crop_image(const float2* __restrict__ in, Pad p, float2* __restrict__ z) {
  const long long V = (long long)p.n0 * p.n1 * p.n2, v = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (v >= V) return;
  const long long i2 = v % p.n2, i1 = (v / p.n2) % p.n1, i0 = v / ((long long)p.n2 * p.n1);
  z[v] = in[(i0 * p.p1 + i1) * p.p2 + i2];
}

unsigned blocks_of(long long n) {
  return unsigned((n + 255) / 256);
}

}  // namespace

ToeplitzNormalCuda::ToeplitzNormalCuda(std::shared_ptr<LinearOperator> op, const ExactGrid& grid,
                                       const cfloat* d_q, gpu::StreamRef stream)
    : LinearOperator(op->domain(), op->codomain(), Location::Device),
      op_(std::move(op)),
      grid_(grid),
      stream_(stream),
      fft_(toeplitz_dims(grid), 1, stream) {
  const Pad p = pad_of(grid);
  const long long L = p.p0 * p.p1 * p.p2;
  qhat_ = DeviceBuffer<cfloat>(Extents{std::size_t(L)});
  pad_ = DeviceBuffer<cfloat>(Extents{std::size_t(L)});
  auto s = static_cast<cudaStream_t>(stream);
  q_circular<<<blocks_of(L), 256, 0, s>>>(reinterpret_cast<const float2*>(d_q), p, 1.0f / float(L),
                                          reinterpret_cast<float2*>(qhat_.data()));
  CUDA_CHECK_LAUNCH("toeplitz q_circular");
  fft_.execute(qhat_.data(), FftDirection::Forward);
}

void ToeplitzNormalCuda::normal(const cfloat* d_x, cfloat* d_z) {
  const Pad p = pad_of(grid_);
  const long long L = p.p0 * p.p1 * p.p2, V = (long long)grid_.voxels();
  auto s = static_cast<cudaStream_t>(stream_);
  auto* b = reinterpret_cast<float2*>(pad_.data());
  pad_image<<<blocks_of(L), 256, 0, s>>>(reinterpret_cast<const float2*>(d_x), p, b);
  CUDA_CHECK_LAUNCH("toeplitz pad_image");
  fft_.execute(pad_.data(), FftDirection::Forward);
  multiply<<<blocks_of(L), 256, 0, s>>>(b, reinterpret_cast<const float2*>(qhat_.data()), L);
  CUDA_CHECK_LAUNCH("toeplitz multiply");
  fft_.execute(pad_.data(), FftDirection::Inverse);
  crop_image<<<blocks_of(V), 256, 0, s>>>(b, p, reinterpret_cast<float2*>(d_z));
  CUDA_CHECK_LAUNCH("toeplitz crop_image");
}

}  // namespace radstream
