// ESPIRiT's steps 3 to 5 on the GPU, the twin of espirit_maps_cpu (recon/espirit.cpp): the kernels'
// correlations, the image-space operator G(x) on the M x M grid, per pixel G's dominant eigenvector and
// eigenvalue, the phase reference, bilinear to N x N, unit root-sum-of-squares and the smooth support weight.
// In double up to the maps (as the CPU), which are float.
//
// The per-pixel eigenvector: the CPU asks LAPACK for the full decomposition; here one block per pixel squares
// the C x C matrix sixteen times (G^65536, normalized by its trace each time), which leaves the dominant
// eigenvector's outer product, takes its largest column, and polishes it with four power steps on G itself.
// Where the two largest eigenvalues are equal (rare: the object folding onto itself) any vector of their span
// is an eigenvector, on both backends.
#include <cuComplex.h>

#include <algorithm>
#include <complex>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "linalg/hermitian_eigen.hpp"
#include "recon/espirit.hpp"

namespace radstream {
namespace {

using cd = cuDoubleComplex;

__device__ cd cmul(cd a, cd b) {
  return cuCmul(a, b);
}
__device__ cd cmulc(cd a, cd b) {  // a conj(b)
  return cuCmul(a, cuConj(b));
}

__device__ void pair_coils(int pair, int coils, int& c, int& d) {
  int rest = pair;
  c = 0;
  while (rest >= coils - c) rest -= coils - c++;
  d = c + rest;
}

// R_cd(s) = sum_i sum_p V_i(p, c) conj(V_i(p - s, d)), s in (-k, k)^2: one thread per (pair, sy, sx).
__global__ void kernel_correlation(const cd* __restrict__ V, int kept, int coils, int k, int pairs,
                                   cd* __restrict__ R) {
  const int D = 2 * k - 1;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= pairs * D * D) return;
  const int pair = t / (D * D), sy = (t / D) % D - (k - 1), sx = t % D - (k - 1);
  int c, d;
  pair_coils(pair, coils, c, d);
  cd s = make_cuDoubleComplex(0, 0);
  for (int py = max(0, sy); py < min(k, k + sy); ++py)
    for (int px = max(0, sx); px < min(k, k + sx); ++px) {
      const cd* a = V + std::size_t((c * k + py) * k + px) * kept;
      const cd* b = V + std::size_t((d * k + py - sy) * k + px - sx) * kept;
      for (int i = 0; i < kept; ++i) s = cuCadd(s, cmulc(a[i], b[i]));
    }
  R[t] = s;
}

// G_cd(x) = (1/k^2) sum_s R_cd(s) exp(+2 pi i s (x - M/2) / M): one thread per (pair, y, x).
__global__ void image_operator(const cd* __restrict__ R, int k, int M, int pairs, cd* __restrict__ G) {
  const int D = 2 * k - 1;
  const long t = long(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= long(pairs) * M * M) return;
  const int pair = int(t / (long(M) * M)), y = int(t / M % M) - M / 2, x = int(t % M) - M / 2;
  const cd* r = R + std::size_t(pair) * D * D;
  double re = 0, im = 0;
  for (int sy = 0; sy < D; ++sy)
    for (int sx = 0; sx < D; ++sx) {
      double sn, cs;
      sincospi(2.0 * ((sx - (k - 1)) * x + (sy - (k - 1)) * y) / M, &sn, &cs);
      const cd v = r[sy * D + sx];
      re += v.x * cs - v.y * sn;
      im += v.x * sn + v.y * cs;
    }
  G[t] = make_cuDoubleComplex(re / (k * k), im / (k * k));
}

// total[pair] = sum_x G_pair(x): one block of 256 per pair (a fixed tree: the same sum every run).
__global__ void sum_over_pixels(const cd* __restrict__ G, long P, cd* __restrict__ total) {
  __shared__ double re[256], im[256];
  const cd* g = G + std::size_t(blockIdx.x) * P;
  double a = 0, b = 0;
  for (long q = threadIdx.x; q < P; q += blockDim.x) {
    a += g[q].x;
    b += g[q].y;
  }
  re[threadIdx.x] = a;
  im[threadIdx.x] = b;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h /= 2) {
    if (int(threadIdx.x) < h) {
      re[threadIdx.x] += re[threadIdx.x + h];
      im[threadIdx.x] += im[threadIdx.x + h];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) total[blockIdx.x] = make_cuDoubleComplex(re[0], im[0]);
}

// A[c][d] of pixel q from G's upper triangle.
__device__ cd pixel_entry(const cd* G, int coils, long P, long q, int c, int d) {
  const int lo = min(c, d), hi = max(c, d);
  const int pair = lo * coils - lo * (lo - 1) / 2 + (hi - lo);
  const cd v = G[std::size_t(pair) * P + q];
  return c <= d ? v : cuConj(v);
}

// G^(2^16): the other eigenvalues' share of the power falls as (lambda_2 / lambda_1)^65536, below double's
// resolution even for eigenvalues 0.1 % apart (0.999^65536 ~ 1e-29).
constexpr int kSquarings = 16;

// One block per pixel: the dominant eigenvector (phase-turned so that pc^H v is real) into low[c][q] and the
// eigenvalue into lambda[q]. Shared memory: two C x C matrices and two C-vectors of double complex.
__global__ void dominant_eigen(const cd* __restrict__ G, int coils, long P, const cd* __restrict__ pc,
                               cuFloatComplex* __restrict__ low, float* __restrict__ lambda) {
  extern __shared__ cd shared[];
  const int C = coils, CC = C * C;
  cd* A = shared;
  cd* B = A + CC;
  cd* v = B + CC;
  cd* u = v + C;
  __shared__ double scale;
  __shared__ int best;
  const long q = blockIdx.x;
  for (int e = threadIdx.x; e < CC; e += blockDim.x) A[e] = pixel_entry(G, C, P, q, e / C, e % C);
  __syncthreads();
  for (int step = 0; step < kSquarings; ++step) {
    for (int e = threadIdx.x; e < CC; e += blockDim.x) {
      const int r = e / C, col = e % C;
      cd s = make_cuDoubleComplex(0, 0);
      for (int j = 0; j < C; ++j) s = cuCadd(s, cmul(A[r * C + j], A[j * C + col]));
      B[e] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double tr = 0;
      for (int j = 0; j < C; ++j) tr += B[j * C + j].x;
      scale = tr > 0 ? 1 / tr : 0;
    }
    __syncthreads();
    for (int e = threadIdx.x; e < CC; e += blockDim.x)
      A[e] = make_cuDoubleComplex(B[e].x * scale, B[e].y * scale);
    __syncthreads();
  }
  if (threadIdx.x == 0) {  // the largest column of G^(2^16)
    double most = -1;
    best = 0;
    for (int col = 0; col < C; ++col) {
      double n = 0;
      for (int r = 0; r < C; ++r)
        n += A[r * C + col].x * A[r * C + col].x + A[r * C + col].y * A[r * C + col].y;
      if (n > most) most = n, best = col;
    }
  }
  __syncthreads();
  for (int r = threadIdx.x; r < C; r += blockDim.x) v[r] = A[r * C + best];
  __syncthreads();
  for (int it = 0; it < 5; ++it) {  // normalize, then (four times) v <- G v
    if (threadIdx.x == 0) {
      double n = 0;
      for (int r = 0; r < C; ++r) n += v[r].x * v[r].x + v[r].y * v[r].y;
      scale = n > 0 ? 1 / sqrt(n) : 0;
    }
    __syncthreads();
    for (int r = threadIdx.x; r < C; r += blockDim.x)
      v[r] = make_cuDoubleComplex(v[r].x * scale, v[r].y * scale);
    __syncthreads();
    if (it == 4) break;
    for (int r = threadIdx.x; r < C; r += blockDim.x) {
      cd s = make_cuDoubleComplex(0, 0);
      for (int j = 0; j < C; ++j) s = cuCadd(s, cmul(pixel_entry(G, C, P, q, r, j), v[j]));
      u[r] = s;
    }
    __syncthreads();
    for (int r = threadIdx.x; r < C; r += blockDim.x) v[r] = u[r];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    cd z = make_cuDoubleComplex(0, 0), rq = make_cuDoubleComplex(0, 0);  // pc^H v and v^H G v
    for (int r = 0; r < C; ++r) {
      z = cuCadd(z, cmul(cuConj(pc[r]), v[r]));
      cd gv = make_cuDoubleComplex(0, 0);
      for (int j = 0; j < C; ++j) gv = cuCadd(gv, cmul(pixel_entry(G, C, P, q, r, j), v[j]));
      rq = cuCadd(rq, cmul(cuConj(v[r]), gv));
    }
    const double az = cuCabs(z);
    const cd turn = az > 0 ? make_cuDoubleComplex(z.x / az, -z.y / az) : make_cuDoubleComplex(1, 0);
    for (int r = 0; r < C; ++r) {
      const cd w = cmul(v[r], turn);
      low[std::size_t(r) * P + q] = make_cuFloatComplex(float(w.x), float(w.y));
    }
    lambda[q] = float(rq.x);
  }
}

// The CPU's BilinearResample (recon/coil_map_refine.cpp) from M to N: the taps of target pixel (y, x).
struct Taps {
  int src[4];
  float w[4];
};
__device__ Taps bilinear(int M, int N, int y, int x) {
  const double s = double(M) / N;
  const double fy = fmin(fmax((y - N / 2) * s + M / 2, 0.0), double(M - 1));
  const double fx = fmin(fmax((x - N / 2) * s + M / 2, 0.0), double(M - 1));
  const int y0 = min(int(fy), M - 2), x0 = min(int(fx), M - 2);
  const double ay = fy - y0, ax = fx - x0;
  return Taps{{y0 * M + x0, y0 * M + x0 + 1, (y0 + 1) * M + x0, (y0 + 1) * M + x0 + 1},
              {float((1 - ay) * (1 - ax)), float((1 - ay) * ax), float(ay * (1 - ax)), float(ay * ax)}};
}

// One thread per target pixel: bilinear maps and eigenvalue, unit RSS, the smooth step (espirit_weight).
__global__ void to_image_grid(const cuFloatComplex* __restrict__ low, const float* __restrict__ lambda,
                              int coils, int M, int N, bool mask, double lo, double hi,
                              cuFloatComplex* __restrict__ maps, float* __restrict__ eigenvalue) {
  const long q = long(blockIdx.x) * blockDim.x + threadIdx.x;
  const long PN = long(N) * N, PM = long(M) * M;
  if (q >= PN) return;
  const Taps t = bilinear(M, N, int(q / N), int(q % N));
  const float lam = lambda[t.src[0]] * t.w[0] + lambda[t.src[1]] * t.w[1] + lambda[t.src[2]] * t.w[2] +
                    lambda[t.src[3]] * t.w[3];
  double rss = 0;
  for (int c = 0; c < coils; ++c) {
    const cuFloatComplex* l = low + std::size_t(c) * PM;
    float re = 0, im = 0;
    for (int j = 0; j < 4; ++j) {
      re += l[t.src[j]].x * t.w[j];
      im += l[t.src[j]].y * t.w[j];
    }
    maps[std::size_t(c) * PN + q] = make_cuFloatComplex(re, im);
    rss += double(re) * re + double(im) * im;
  }
  float w = 1.f;
  if (mask) {
    if (!(hi > lo)) {
      w = lam >= 0.5 * (lo + hi) ? 1.f : 0.f;
    } else {
      const double x = fmin(fmax((double(lam) - lo) / (hi - lo), 0.0), 1.0);
      w = float(x * x * (3 - 2 * x));
    }
  }
  const float scale = rss > 0 ? float(w / sqrt(rss)) : 0.f;
  for (int c = 0; c < coils; ++c) {
    cuFloatComplex& m = maps[std::size_t(c) * PN + q];
    m = make_cuFloatComplex(m.x * scale, m.y * scale);
  }
  eigenvalue[q] = lam;
}

int blocks(long n, int threads) {
  return int((n + threads - 1) / threads);
}

}  // namespace

EspiritMaps espirit_maps_cuda(const EspiritSubspace& s, const EspiritParams& p) {
  const int C = s.coils, k = s.kernel, M = s.grid, N = s.matrix, D = 2 * k - 1, pairs = C * (C + 1) / 2;
  const long PM = long(M) * M, PN = long(N) * N;
  const std::size_t shared = (2 * std::size_t(C) * C + 2 * C) * sizeof(cd);
  constexpr std::size_t kMaxShared = 200 * 1024;  // of the 227 KiB a block may opt into on sm_90
  if (shared > kMaxShared)
    throw InputError("espirit (cuda): " + std::to_string(C) + " coils need " + std::to_string(shared / 1024) +
                     " KiB of shared memory per block (at most " + std::to_string(kMaxShared / 1024) +
                     " KiB); compress the coils first");
  gpu::Stream stream;
  const gpu::StreamRef st = stream.get();
  DeviceBuffer<cd> V(Extents{s.V.size()}), R(Extents{std::size_t(pairs) * D * D}),
      G(Extents{std::size_t(pairs) * PM}), total(Extents{std::size_t(pairs)}), pc(Extents{std::size_t(C)});
  gpu::copy_to_device(V.data(), s.V.data(), s.V.size() * sizeof(cd), st);
  kernel_correlation<<<blocks(long(pairs) * D * D, 128), 128, 0, st>>>(V.data(), s.kept, C, k, pairs,
                                                                       R.data());
  CUDA_CHECK_LAUNCH("espirit kernel_correlation");
  image_operator<<<blocks(long(pairs) * PM, 256), 256, 0, st>>>(R.data(), k, M, pairs, G.data());
  CUDA_CHECK_LAUNCH("espirit image_operator");
  sum_over_pixels<<<pairs, 256, 0, st>>>(G.data(), PM, total.data());
  CUDA_CHECK_LAUNCH("espirit sum_over_pixels");
  // The phase reference (the first principal component of the coils) on the host: one C x C problem.
  std::vector<std::complex<double>> t(pairs), full(std::size_t(C) * C);
  gpu::copy_to_host(t.data(), total.data(), pairs * sizeof(cd), st);
  gpu::synchronize(st);
  for (int c = 0, pair = 0; c < C; ++c)
    for (int d = c; d < C; ++d, ++pair) {
      full[std::size_t(c) * C + d] = t[pair];
      full[std::size_t(d) * C + c] = std::conj(t[pair]);
    }
  const HermitianEigen first = hermitian_eigen_lapack(std::move(full), C);
  std::vector<std::complex<double>> u(C);
  for (int c = 0; c < C; ++c) u[c] = first.vectors[std::size_t(c) * C];
  gpu::copy_to_device(pc.data(), u.data(), C * sizeof(cd), st);
  DeviceBuffer<cuFloatComplex> low(Extents{std::size_t(C), std::size_t(PM)}),
      maps(Extents{std::size_t(C), std::size_t(N), std::size_t(N)});
  DeviceBuffer<float> lambda(Extents{std::size_t(PM)}), eig(Extents{std::size_t(PN)});
  CUDA_CHECK(cudaFuncSetAttribute(dominant_eigen, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
  dominant_eigen<<<unsigned(PM), 128, shared, st>>>(G.data(), C, PM, pc.data(), low.data(), lambda.data());
  CUDA_CHECK_LAUNCH("espirit dominant_eigen");
  to_image_grid<<<blocks(PN, 256), 256, 0, st>>>(low.data(), lambda.data(), C, M, N, p.mask, p.crop - p.soft,
                                                 p.crop + p.soft, maps.data(), eig.data());
  CUDA_CHECK_LAUNCH("espirit to_image_grid");
  EspiritMaps out;
  out.kept = s.kept;
  out.maps = HostBuffer<cfloat>(Extents{std::size_t(C), std::size_t(N), std::size_t(N)});
  out.eigenvalue.resize(std::size_t(PN));
  gpu::copy_to_host(out.maps.data(), maps.data(), out.maps.size() * sizeof(cfloat), st);
  gpu::copy_to_host(out.eigenvalue.data(), eig.data(), out.eigenvalue.size() * sizeof(float), st);
  gpu::synchronize(st);
  return out;
}

}  // namespace radstream
