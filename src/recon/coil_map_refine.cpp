#include "recon/coil_map_refine.hpp"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.hpp"
#include "iter/conjugate_gradient.hpp"
#include "noncart/sense_operator_cpu.hpp"

namespace radstream {

BilinearResample::BilinearResample(int from, int to)
    : LinearOperator(Extents{std::size_t(from), std::size_t(from)}, Extents{std::size_t(to), std::size_t(to)},
                     Location::Host),
      S_(from),
      T_(to),
      taps_(std::size_t(to) * to) {
  if (from < 2 || to < 1)
    throw ConfigError("bilinear resample: grids " + std::to_string(from) + " -> " + std::to_string(to) +
                      " are too small");
  const double s = double(S_) / T_;
  for (int y = 0; y < T_; ++y) {
    const double fy = std::clamp((y - T_ / 2) * s + S_ / 2, 0.0, double(S_ - 1));
    const int y0 = std::min(int(fy), S_ - 2), y1 = y0 + 1;
    const double ay = fy - y0;
    for (int x = 0; x < T_; ++x) {
      const double fx = std::clamp((x - T_ / 2) * s + S_ / 2, 0.0, double(S_ - 1));
      const int x0 = std::min(int(fx), S_ - 2), x1 = x0 + 1;
      const double ax = fx - x0;
      taps_[std::size_t(y) * T_ + x] =
          Tap{{y0 * S_ + x0, y0 * S_ + x1, y1 * S_ + x0, y1 * S_ + x1},
              {float((1 - ay) * (1 - ax)), float((1 - ay) * ax), float(ay * (1 - ax)), float(ay * ax)}};
    }
  }
}

void BilinearResample::forward(const cfloat* a, cfloat* v) {
  for (std::size_t o = 0; o < taps_.size(); ++o) {
    const Tap& t = taps_[o];
    v[o] = a[t.src[0]] * t.w[0] + a[t.src[1]] * t.w[1] + a[t.src[2]] * t.w[2] + a[t.src[3]] * t.w[3];
  }
}

void BilinearResample::adjoint(const cfloat* v, cfloat* a) {
  std::fill(a, a + std::size_t(S_) * S_, cfloat(0.f));
  for (std::size_t o = 0; o < taps_.size(); ++o) {
    const Tap& t = taps_[o];
    for (int k = 0; k < 4; ++k) a[t.src[k]] += v[o] * t.w[k];
  }
}

HostBuffer<cfloat> refine_coil_maps(View<const cfloat> data, View<const float> traj, int N, int M,
                                    const HostBuffer<cfloat>& maps_M, const CoilMapRefine& p) {
  const int coils = int(data.ext[0]);
  const std::size_t n = data.ext.size() / std::size_t(coils), PM = std::size_t(M) * M;
  // The band |k| < M / 2N in cycles per pixel of M; the rest weighs 0 (at k = 0, so nothing wraps).
  std::vector<float> t(2 * n, 0.f), w(n, 0.f);
  const double scale = double(N) / M;
  for (std::size_t j = 0; j < n; ++j) {
    const double kx = traj.data[2 * j] * scale, ky = traj.data[2 * j + 1] * scale;
    if (!(std::hypot(kx, ky) < 0.5)) continue;
    t[2 * j] = float(kx);
    t[2 * j + 1] = float(ky);
    w[j] = 1.f;
  }
  auto ops = make_vector_ops_cpu();
  // 1. x: CG-SENSE at M with the current maps.
  std::vector<cfloat> x(PM);
  {
    SenseOperatorCpu op(M, coils, n, NufftKernel{}, true, p.threads);
    op.set_maps(maps_M.data());
    op.set_points(t.data(), w.data());
    std::vector<cfloat> b(PM);
    op.adjoint(data.data, b.data());
    ConjugateGradient cg(PM, *ops);
    CgOptions o;
    o.max_iterations = p.image_iterations;
    o.lambda = 1e-2 * op.weight_sum();
    cg.solve(op, b.data(), x.data(), o, false);
  }
  // 2. Per coil, the smooth map that explains its data with this x.
  const int F = std::min(p.fit_grid, M);
  auto up = std::make_shared<BilinearResample>(F, M);
  auto sense = std::make_shared<SenseOperatorCpu>(M, 1, n, NufftKernel{}, false, p.threads);
  sense->set_maps(x.data());
  sense->set_points(t.data(), w.data());
  ChainOperator a_op(up, sense);
  ConjugateGradient cg(std::size_t(F) * F, *ops);
  double xmax = 0;
  for (const auto& v : x) xmax = std::max(xmax, double(std::norm(v)));
  CgOptions o;
  o.max_iterations = p.fit_iterations;
  // The diagonal of (x B)^H (x B) is about sum_j w_j |x|^2 (M/F)^2: a small relative Tikhonov keeps the
  // coefficients outside the object bounded.
  o.lambda = 1e-3 * sense->weight_sum() * xmax * (double(M) * M) / (double(F) * F);
  HostBuffer<cfloat> out(maps_M.extents());
  std::vector<cfloat> b(std::size_t(F) * F), a(std::size_t(F) * F);
  for (int c = 0; c < coils; ++c) {
    a_op.adjoint(data.data + std::size_t(c) * n, b.data());
    cg.solve(a_op, b.data(), a.data(), o, false);
    up->forward(a.data(), out.data() + std::size_t(c) * PM);
  }
  return out;
}

}  // namespace radstream
