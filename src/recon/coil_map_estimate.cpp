#include "recon/coil_map_estimate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <omp.h>

#include "core/error.hpp"
#include "gpu/handles.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "recon/coil_map_refine.hpp"

namespace radstream {

namespace {

int threads_of(const CoilMapEstimate& p) {
  return p.threads > 0 ? p.threads : omp_get_max_threads();
}

// Low-resolution coil images [coils][L][L] from the points with |k| < L / (2N).
HostBuffer<cfloat> low_res_images(View<const cfloat> data, View<const float> traj, int N, int L,
                                  int threads) {
  const int coils = int(data.ext[0]);
  const std::size_t n = data.ext[1] * data.ext[2];
  const double scale = double(N) / L;  // k in cycles per low-resolution pixel
  std::vector<float> t(2 * n, 0.f), w(n, 0.f);
  for (std::size_t j = 0; j < n; ++j) {
    const double kx = traj.data[2 * j] * scale, ky = traj.data[2 * j + 1] * scale, r = std::hypot(kx, ky);
    if (!(r < 0.5)) continue;  // outside the low-resolution band (or not finite): weight 0 at k = 0
    t[2 * j] = float(kx);
    t[2 * j + 1] = float(ky);
    w[j] = float((r + 0.25 / L) * 0.5 * (1 + std::cos(2 * M_PI * r)));  // ramp x Hann
  }
  NufftOperatorCpu nufft(2, {L, L, 1}, coils, n, NufftKernel{4, 2.0, 1024}, FftPlanner::Estimate, threads);
  nufft.set_points(t.data());
  HostBuffer<cfloat> weighted(Extents{std::size_t(coils), n});
  for (int c = 0; c < coils; ++c)
    for (std::size_t j = 0; j < n; ++j) weighted[c * n + j] = data.data[c * n + j] * w[j];
  HostBuffer<cfloat> img(Extents{std::size_t(coils), std::size_t(L), std::size_t(L)});
  nufft.adjoint(weighted.data(), img.data());
  return img;
}

// Walsh: the dominant eigenvector of the neighbourhood's coil correlation, per low-resolution pixel; its
// mean energy per pixel (the correlation's trace) into `local` [L][L].
HostBuffer<cfloat> walsh(const HostBuffer<cfloat>& img, int L, int coils, const CoilMapEstimate& p,
                         std::vector<double>& local) {
  const std::size_t P = std::size_t(L) * L;
  HostBuffer<cfloat> maps(Extents{std::size_t(coils), std::size_t(L), std::size_t(L)});
  std::vector<double> energy(coils, 0.0);
  for (int c = 0; c < coils; ++c)
    for (std::size_t q = 0; q < P; ++q) energy[c] += std::norm(img[c * P + q]);
  const int ref = int(std::max_element(energy.begin(), energy.end()) - energy.begin());
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads_of(p))
  for (int y = 0; y < L; ++y) {
    std::vector<std::complex<double>> v(coils), u(coils);
    for (int x = 0; x < L; ++x) {
      const int R = p.radius;
      const int y0 = std::max(0, y - R), y1 = std::min(L - 1, y + R);
      const int x0 = std::max(0, x - R), x1 = std::min(L - 1, x + R);
      // Start from the neighbourhood's sum (the dominant direction for smooth sensitivities).
      std::fill(v.begin(), v.end(), 0.0);
      double e = 0;
      for (int yy = y0; yy <= y1; ++yy)
        for (int xx = x0; xx <= x1; ++xx)
          for (int c = 0; c < coils; ++c) {
            const std::complex<double> s(img[c * P + std::size_t(yy) * L + xx]);
            v[c] += s;
            e += std::norm(s);
          }
      local[std::size_t(y) * L + x] = e / double((y1 - y0 + 1) * (x1 - x0 + 1));
      for (int it = 0; it < p.power_iterations; ++it) {
        std::fill(u.begin(), u.end(), 0.0);
        for (int yy = y0; yy <= y1; ++yy)
          for (int xx = x0; xx <= x1; ++xx) {
            std::complex<double> dot = 0;  // I_n^H v
            for (int c = 0; c < coils; ++c)
              dot += std::conj(std::complex<double>(img[c * P + std::size_t(yy) * L + xx])) * v[c];
            for (int c = 0; c < coils; ++c)
              u[c] += std::complex<double>(img[c * P + std::size_t(yy) * L + xx]) * dot;
          }
        double norm = 0;
        for (auto& e : u) norm += std::norm(e);
        norm = std::sqrt(norm);
        if (norm == 0) break;
        for (int c = 0; c < coils; ++c) v[c] = u[c] / norm;
      }
      double norm = 0;
      for (auto& e : v) norm += std::norm(e);
      norm = std::sqrt(norm);
      const std::complex<double> phase =
          std::abs(v[ref]) > 0 ? std::conj(v[ref]) / std::abs(v[ref]) : std::complex<double>(1.0);
      for (int c = 0; c < coils; ++c)
        maps[c * P + std::size_t(y) * L + x] =
            norm > 0 ? cfloat(v[c] * phase / norm) : cfloat(c == ref ? 1.f : 0.f, 0.f);
    }
  }
  return maps;
}

}  // namespace

double coil_map_band_radius(int N, const CoilMapEstimate& p) {
  const int L = std::min(N, std::max(8, p.matrix - p.matrix % 2));
  // What the estimate reads: Walsh's low-resolution matrix and the refinement's, or ESPIRiT's band of
  // |k| < calibration samples (recon/espirit.cpp).
  const int B = p.method == CoilMapMethod::Espirit
                    ? std::min(N, 2 * p.espirit.calibration)
                    : std::max(L, p.refine.matrix > 0 ? std::min(N, p.refine.matrix) : 0);
  return 0.5 * B / N;
}

CoilMapBand coil_map_band(View<const cfloat> data, View<const float> traj, int N, const CoilMapEstimate& p) {
  if (data.ext.rank != 3 || traj.size() != 2 * data.ext[1] * data.ext[2])
    throw InputError(fmt::format("coil map estimate: data {} and trajectory of {} values do not match",
                                 data.ext.str(), traj.size()));
  const std::size_t n = data.ext[1] * data.ext[2], coils = data.ext[0];
  const double band = coil_map_band_radius(N, p);
  std::vector<std::size_t> keep;
  for (std::size_t j = 0; j < n; ++j)
    if (std::hypot(traj.data[2 * j], traj.data[2 * j + 1]) < band) keep.push_back(j);
  CoilMapBand b{HostBuffer<cfloat>(Extents{coils, 1, std::max<std::size_t>(keep.size(), 1)}),
                HostBuffer<float>(Extents{std::max<std::size_t>(keep.size(), 1), 2})};
  for (std::size_t i = 0; i < keep.size(); ++i) {
    b.traj[2 * i] = traj.data[2 * keep[i]];
    b.traj[2 * i + 1] = traj.data[2 * keep[i] + 1];
    for (std::size_t c = 0; c < coils; ++c) b.data[c * keep.size() + i] = data.data[c * n + keep[i]];
  }
  return b;
}

namespace {

// Maps [coils][S][S] to [coils][T][T]: bilinear (maps and support), zero outside the interpolated support
// (< 0.5), unit root-sum-of-squares inside.
HostBuffer<cfloat> to_grid(const HostBuffer<cfloat>& src, const std::vector<float>& support, int S, int T,
                           const CoilMapEstimate& p) {
  const int coils = int(src.extents()[0]);
  BilinearResample up(S, T);
  const std::size_t PS = std::size_t(S) * S, PT = std::size_t(T) * T;
  HostBuffer<cfloat> out(Extents{std::size_t(coils), std::size_t(T), std::size_t(T)});
  for (int c = 0; c < coils; ++c) up.forward(src.data() + c * PS, out.data() + c * PT);
  std::vector<cfloat> sup(PS), inside(PT);
  for (std::size_t q = 0; q < PS; ++q) sup[q] = cfloat(support[q], 0.f);
  up.forward(sup.data(), inside.data());
#pragma omp parallel for schedule(static) num_threads(threads_of(p))
  for (long q = 0; q < long(PT); ++q) {
    double rss = 0;
    for (int c = 0; c < coils; ++c) rss += std::norm(out[c * PT + q]);
    const float inv = rss > 0 && inside[q].real() >= 0.5f ? float(1 / std::sqrt(rss)) : 0.f;
    for (int c = 0; c < coils; ++c) out[c * PT + q] *= inv;
  }
  return out;
}

}  // namespace

HostBuffer<cfloat> estimate_coil_maps(View<const cfloat> data, View<const float> traj, int N,
                                      const CoilMapEstimate& p) {
  if (data.ext.rank != 3 || traj.size() != 2 * data.ext[1] * data.ext[2])
    throw InputError(fmt::format("coil map estimate: data {} and trajectory of {} values do not match",
                                 data.ext.str(), traj.size()));
  if (N < 2 || N % 2) throw InputError(fmt::format("coil map estimate: matrix {} must be even", N));
  if (p.method == CoilMapMethod::Espirit) {
    EspiritParams e = p.espirit;
    e.grid = p.matrix;
    e.threads = threads_of(p);
    e.mask = p.mask == SensMask::Auto;
    if (p.backend == Backend::Cuda) {
      const gpu::DeviceGuard on(p.device);  // the caller may be a helper thread
      return espirit_maps(data, traj, N, e, Backend::Cuda).maps;
    }
    return espirit_maps(data, traj, N, e).maps;
  }
  const int coils = int(data.ext[0]);
  const int L = std::min(N, std::max(8, p.matrix - p.matrix % 2));
  const HostBuffer<cfloat> img = low_res_images(data, traj, N, L, threads_of(p));
  std::vector<double> local(std::size_t(L) * L);
  const HostBuffer<cfloat> low = walsh(img, L, coils, p, local);
  // Support: energy above the threshold, dilated by one pixel.
  const double peak = *std::max_element(local.begin(), local.end());
  std::vector<float> above(local.size()), support(local.size());
  const double threshold = p.mask == SensMask::Auto ? p.mask_threshold : 0.0;
  for (std::size_t q = 0; q < local.size(); ++q) above[q] = local[q] >= threshold * peak ? 1.f : 0.f;
  for (int y = 0; y < L; ++y)
    for (int x = 0; x < L; ++x) {
      float m = 0.f;
      for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
          const int yy = y + dy, xx = x + dx;
          if (yy >= 0 && yy < L && xx >= 0 && xx < L) m = std::max(m, above[std::size_t(yy) * L + xx]);
        }
      support[std::size_t(y) * L + x] = m;
    }
  if (p.refine.matrix <= 0) return to_grid(low, support, L, N, p);
  // Refinement against the data on an M grid, then to N with the support carried along.
  const int M = std::min(N, std::max(8, p.refine.matrix - p.refine.matrix % 2));
  const HostBuffer<cfloat> maps_M = to_grid(low, support, L, M, p);
  std::vector<float> support_M(std::size_t(M) * M, 0.f);
  const std::size_t PM = std::size_t(M) * M;
  for (std::size_t q = 0; q < PM; ++q)
    for (int c = 0; c < coils && support_M[q] == 0.f; ++c)
      if (maps_M[c * PM + q] != cfloat(0.f)) support_M[q] = 1.f;
  CoilMapRefine r = p.refine;
  r.threads = threads_of(p);
  const HostBuffer<cfloat> fit = refine_coil_maps(data, traj, N, M, maps_M, r);
  return to_grid(fit, support_M, M, N, p);
}

}  // namespace radstream
