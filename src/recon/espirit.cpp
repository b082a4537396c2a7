#include "recon/espirit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>

#include <omp.h>

#include "core/error.hpp"
#include "linalg/hermitian_eigen.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "recon/coil_map_refine.hpp"

namespace radstream {

namespace {

using cd = std::complex<double>;

int threads_of(const EspiritParams& p) {
  return p.threads > 0 ? p.threads : omp_get_max_threads();
}

// The central cal x cal samples of each coil's Cartesian k-space, [coils][cal][cal] (sample m at m + cal/2):
// the ramp-weighted adjoint NUFFT of the band |k| < L/2 samples on an L = 2 cal grid, then its DFT
// K(m) = sum_x I(x) exp(-2 pi i m x / L), the inverse of the NUFFT's exp(+2 pi i k x).
std::vector<cd> calibration_region(View<const cfloat> data, View<const float> traj, int N, int cal,
                                   int threads) {
  const int coils = int(data.ext[0]);
  const std::size_t n = data.ext[1] * data.ext[2];
  const int L = 2 * cal;
  std::vector<float> t(2 * n, 0.f), w(n, 0.f);
  for (std::size_t j = 0; j < n; ++j) {
    const double kx = double(traj.data[2 * j]) * N, ky = double(traj.data[2 * j + 1]) * N;
    const double r = std::hypot(kx, ky);
    if (!(r < 0.5 * L)) continue;  // outside the band (or not finite): weight 0 at k = 0
    t[2 * j] = float(kx / L);
    t[2 * j + 1] = float(ky / L);
    w[j] = float(std::max(r, 0.25));  // the ramp; the centre sample keeps the area of its small disc
  }
  NufftOperatorCpu nufft(2, {L, L, 1}, coils, n, NufftKernel{6, 2.0, 1024}, FftPlanner::Estimate, threads);
  nufft.set_points(t.data());
  // The maps do not depend on the data's scale: the weighted samples are divided by their largest
  // magnitude, so that data near float's limits (1e30, a sample of 3e38, denormals) neither overflow nor
  // vanish in the sums below.
  double peak = 0;
  for (int c = 0; c < coils; ++c)
    for (std::size_t j = 0; j < n; ++j)
      if (w[j] > 0) peak = std::max(peak, std::abs(std::complex<double>(data.data[c * n + j])) * w[j]);
  if (!std::isfinite(peak))
    throw InputError("espirit: a sample near k = 0 is not finite; no coil maps can be estimated");
  if (!(peak > 0))
    throw InputError("espirit: the calibration region holds no signal (all samples near k = 0 are zero)");
  HostBuffer<cfloat> weighted(Extents{std::size_t(coils), n});
  for (int c = 0; c < coils; ++c)
    for (std::size_t j = 0; j < n; ++j)
      weighted[c * n + j] = cfloat(std::complex<double>(data.data[c * n + j]) * (double(w[j]) / peak));
  HostBuffer<cfloat> img(Extents{std::size_t(coils), std::size_t(L), std::size_t(L)});
  nufft.adjoint(weighted.data(), img.data());
  std::vector<cd> e(std::size_t(cal) * L);  // e[m][x] = exp(-2 pi i m x / L), m and x centred
  for (int m = 0; m < cal; ++m)
    for (int x = 0; x < L; ++x)
      e[std::size_t(m) * L + x] = std::polar(1.0, -2 * M_PI * (m - cal / 2) * (x - L / 2) / L);
  std::vector<cd> out(std::size_t(coils) * cal * cal);
#pragma omp parallel for num_threads(threads)
  for (int c = 0; c < coils; ++c) {
    std::vector<cd> rows(std::size_t(L) * cal);  // [y][mx]
    const cfloat* I = img.data() + std::size_t(c) * L * L;
    for (int y = 0; y < L; ++y)
      for (int mx = 0; mx < cal; ++mx) {
        cd s = 0;
        for (int x = 0; x < L; ++x) s += cd(I[std::size_t(y) * L + x]) * e[std::size_t(mx) * L + x];
        rows[std::size_t(y) * cal + mx] = s;
      }
    for (int my = 0; my < cal; ++my)
      for (int mx = 0; mx < cal; ++mx) {
        cd s = 0;
        for (int y = 0; y < L; ++y) s += rows[std::size_t(y) * cal + mx] * e[std::size_t(my) * L + y];
        out[(std::size_t(c) * cal + my) * cal + mx] = s;
      }
  }
  return out;
}

// The signal subspace of the calibration matrix A (rows: the region's patches, conjugated; column (c, py, px)
// of a row at (oy, ox): conj K_c(oy + py, ox + px), so that the patches themselves lie in the span of the
// right singular vectors, not of their conjugates): the right singular vectors with sigma^2 >= threshold x
// sigma_max^2, as columns of a [k^2 coils][kept] matrix. Through the smaller Gram matrix: A A^H when there
// are fewer rows.
std::vector<cd> signal_subspace(const std::vector<cd>& K, int coils, int cal, int k, double threshold,
                                int threads, int& kept) {
  const int span = cal - k + 1, rows = span * span, cols = k * k * coils;
  std::vector<cd> A(std::size_t(rows) * cols);
  for (int oy = 0; oy < span; ++oy)
    for (int ox = 0; ox < span; ++ox)
      for (int c = 0; c < coils; ++c)
        for (int py = 0; py < k; ++py)
          for (int px = 0; px < k; ++px)
            A[std::size_t(oy * span + ox) * cols + (c * k + py) * k + px] =
                std::conj(K[(std::size_t(c) * cal + oy + py) * cal + ox + px]);
  const bool by_rows = rows <= cols;
  const int g = by_rows ? rows : cols;
  std::vector<cd> B(std::size_t(g) * g);
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
  for (int a = 0; a < g; ++a)
    for (int b = a; b < g; ++b) {
      cd s = 0;
      if (by_rows)
        for (int q = 0; q < cols; ++q)
          s += A[std::size_t(a) * cols + q] * std::conj(A[std::size_t(b) * cols + q]);
      else
        for (int r = 0; r < rows; ++r)
          s += std::conj(A[std::size_t(r) * cols + a]) * A[std::size_t(r) * cols + b];
      B[std::size_t(a) * g + b] = s;
      B[std::size_t(b) * g + a] = std::conj(s);
    }
  const HermitianEigen eig = hermitian_eigen_lapack(std::move(B), g);
  if (!(eig.values[0] > 0))
    throw InputError("espirit: the calibration region holds no signal (all samples near k = 0 are zero)");
  kept = 0;
  while (kept < g && eig.values[kept] > 0 && eig.values[kept] >= threshold * eig.values[0]) ++kept;
  std::vector<cd> V(std::size_t(cols) * kept);
  for (int i = 0; i < kept; ++i) {
    if (!by_rows) {
      for (int q = 0; q < cols; ++q) V[std::size_t(q) * kept + i] = eig.vectors[std::size_t(q) * g + i];
      continue;
    }
    const double sigma = std::sqrt(eig.values[i]);  // v = A^H u / sigma
    for (int q = 0; q < cols; ++q) {
      cd s = 0;
      for (int r = 0; r < rows; ++r)
        s += std::conj(A[std::size_t(r) * cols + q]) * eig.vectors[std::size_t(r) * g + i];
      V[std::size_t(q) * kept + i] = s / sigma;
    }
  }
  return V;
}

// G(x) on the grid: for each coil pair c <= d, G_cd(x) = (1/k^2) sum_s R_cd(s) exp(+2 pi i s x / N), with the
// kernels' correlation R_cd(s) = sum_i sum_p V_i(p, c) conj(V_i(p - s, d)) (s in (-k, k)^2) and x the grid
// pixel's position in pixels of N. Returns [pairs][M][M], pairs in row-major upper-triangle order.
std::vector<cd> image_operator(const std::vector<cd>& V, int kept, int coils, int k, int M, int threads) {
  const int D = 2 * k - 1, pairs = coils * (coils + 1) / 2;
  std::vector<cd> e(std::size_t(D) * M);  // e[s][x] = exp(+2 pi i s (x - M/2) / M)
  for (int s = 0; s < D; ++s)
    for (int x = 0; x < M; ++x)
      e[std::size_t(s) * M + x] = std::polar(1.0, 2 * M_PI * (s - (k - 1)) * (x - M / 2) / M);
  std::vector<cd> G(std::size_t(pairs) * M * M);
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int pair = 0; pair < pairs; ++pair) {
    int c = 0, rest = pair;
    while (rest >= coils - c) rest -= coils - c++;
    const int d = c + rest;
    std::vector<cd> R(std::size_t(D) * D, 0.0);
    for (int py = 0; py < k; ++py)
      for (int px = 0; px < k; ++px)
        for (int qy = 0; qy < k; ++qy)
          for (int qx = 0; qx < k; ++qx) {
            const cd* a = &V[std::size_t((c * k + py) * k + px) * kept];
            const cd* b = &V[std::size_t((d * k + qy) * k + qx) * kept];
            cd s = 0;
            for (int i = 0; i < kept; ++i) s += a[i] * std::conj(b[i]);
            R[std::size_t(py - qy + k - 1) * D + (px - qx + k - 1)] += s;
          }
    std::vector<cd> H(std::size_t(D) * M, 0.0);  // [sy][x]
    for (int sy = 0; sy < D; ++sy)
      for (int sx = 0; sx < D; ++sx)
        for (int x = 0; x < M; ++x)
          H[std::size_t(sy) * M + x] += R[std::size_t(sy) * D + sx] * e[std::size_t(sx) * M + x];
    cd* out = &G[std::size_t(pair) * M * M];
    for (int y = 0; y < M; ++y)
      for (int x = 0; x < M; ++x) {
        cd s = 0;
        for (int sy = 0; sy < D; ++sy) s += H[std::size_t(sy) * M + x] * e[std::size_t(sy) * M + y];
        out[std::size_t(y) * M + x] = s / double(k * k);
      }
  }
  return G;
}

std::vector<cd> pixel_matrix(const std::vector<cd>& G, int coils, std::size_t P, std::size_t q) {
  std::vector<cd> m(std::size_t(coils) * coils);
  std::size_t pair = 0;
  for (int c = 0; c < coils; ++c)
    for (int d = c; d < coils; ++d, ++pair) {
      m[std::size_t(c) * coils + d] = G[pair * P + q];
      m[std::size_t(d) * coils + c] = std::conj(G[pair * P + q]);
    }
  return m;
}

}  // namespace

float espirit_weight(float eigenvalue, const EspiritParams& p) {
  const double lo = p.crop - p.soft, hi = p.crop + p.soft;
  if (!(hi > lo)) return eigenvalue >= p.crop ? 1.f : 0.f;
  const double t = std::clamp((double(eigenvalue) - lo) / (hi - lo), 0.0, 1.0);
  return float(t * t * (3 - 2 * t));
}

EspiritSubspace espirit_subspace(View<const cfloat> data, View<const float> traj, int N,
                                 const EspiritParams& p) {
  if (data.ext.rank != 3 || traj.size() != 2 * data.ext[1] * data.ext[2])
    throw InputError(fmt::format("espirit: data {} and trajectory of {} values do not match", data.ext.str(),
                                 traj.size()));
  if (N < 8 || N % 2) throw InputError(fmt::format("espirit: matrix {} must be even and at least 8", N));
  if (p.kernel < 2 || p.calibration < p.kernel + 2 || p.calibration % 2)
    throw InputError(
        fmt::format("espirit: calibration region {} and kernel {} (need an even region of at "
                    "least kernel + 2)",
                    p.calibration, p.kernel));
  // A small matrix has no samples past |k| = N/2: the region's corners must stay inside that circle.
  const int cal = std::min(p.calibration, std::max(4, int(0.7 * N) / 2 * 2));
  const int threads = threads_of(p);
  EspiritSubspace s;
  s.coils = int(data.ext[0]);
  s.kernel = std::min(p.kernel, cal - 2);
  s.matrix = N;
  s.grid = std::min(N, std::max(8, p.grid - p.grid % 2));
  const std::vector<cd> K = calibration_region(data, traj, N, cal, threads);
  s.V = signal_subspace(K, s.coils, cal, s.kernel, p.threshold, threads, s.kept);
  return s;
}

EspiritMaps espirit_maps_cpu(const EspiritSubspace& s, const EspiritParams& p) {
  const int threads = threads_of(p), coils = s.coils, k = s.kernel, M = s.grid, N = s.matrix;
  EspiritMaps out;
  out.kept = s.kept;
  const std::size_t PM = std::size_t(M) * M, PN = std::size_t(N) * N;
  const std::vector<cd> G = image_operator(s.V, s.kept, coils, k, M, threads);
  // The phase reference: the first principal component of the coils, the dominant eigenvector of sum_x G(x).
  std::vector<cd> total(std::size_t(coils) * coils, 0.0);
  for (std::size_t q = 0; q < PM; ++q) {
    const std::vector<cd> m = pixel_matrix(G, coils, PM, q);
    for (std::size_t i = 0; i < m.size(); ++i) total[i] += m[i];
  }
  const HermitianEigen pc = hermitian_eigen_lapack(total, coils);
  HostBuffer<cfloat> low(Extents{std::size_t(coils), std::size_t(M), std::size_t(M)});
  std::vector<cfloat> lambda(PM);
#pragma omp parallel for schedule(dynamic, 16) num_threads(threads)
  for (long q = 0; q < long(PM); ++q) {
    const HermitianEigen e = hermitian_eigen_lapack(pixel_matrix(G, coils, PM, std::size_t(q)), coils);
    cd z = 0;  // u^H v
    for (int c = 0; c < coils; ++c)
      z += std::conj(pc.vectors[std::size_t(c) * coils]) * e.vectors[std::size_t(c) * coils];
    const cd turn = std::abs(z) > 0 ? std::conj(z) / std::abs(z) : cd(1.0);
    for (int c = 0; c < coils; ++c)
      low[c * PM + std::size_t(q)] = cfloat(e.vectors[std::size_t(c) * coils] * turn);
    lambda[std::size_t(q)] = cfloat(float(e.values[0]), 0.f);
  }
  BilinearResample up(M, N);
  out.maps = HostBuffer<cfloat>(Extents{std::size_t(coils), std::size_t(N), std::size_t(N)});
  for (int c = 0; c < coils; ++c) up.forward(low.data() + c * PM, out.maps.data() + c * PN);
  std::vector<cfloat> lam(PN);
  up.forward(lambda.data(), lam.data());
  out.eigenvalue.resize(PN);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long q = 0; q < long(PN); ++q) {
    double rss = 0;
    for (int c = 0; c < coils; ++c) rss += std::norm(out.maps[c * PN + std::size_t(q)]);
    out.eigenvalue[std::size_t(q)] = lam[std::size_t(q)].real();
    const float w = p.mask ? espirit_weight(lam[std::size_t(q)].real(), p) : 1.f;
    const float scale = rss > 0 ? float(w / std::sqrt(rss)) : 0.f;
    for (int c = 0; c < coils; ++c) out.maps[c * PN + std::size_t(q)] *= scale;
  }
  return out;
}

EspiritMaps espirit_maps(View<const cfloat> data, View<const float> traj, int N, const EspiritParams& p,
                         Backend backend) {
  const EspiritSubspace s = espirit_subspace(data, traj, N, p);
  return backend == Backend::Cuda ? espirit_maps_cuda(s, p) : espirit_maps_cpu(s, p);
}

}  // namespace radstream
