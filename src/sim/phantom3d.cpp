#include "sim/phantom3d.hpp"

#include <cmath>
#include <numbers>
#include <random>
#include <type_traits>

#include "core/error.hpp"

namespace radstream {

std::vector<Ellipsoid> shepp_logan_3d() {
  // The modified (Toft-contrast) 3D Shepp-Logan set; the two tilted inner ellipsoids keep only their z
  // rotation.
  return {{1.0, 0.6900, 0.920, 0.810, 0.00, 0.0000, 0.00, 0},
          {-0.8, 0.6624, 0.874, 0.780, 0.00, -0.0184, 0.00, 0},
          {-0.2, 0.1100, 0.310, 0.220, 0.22, 0.0000, 0.00, -18},
          {-0.2, 0.1600, 0.410, 0.280, -0.22, 0.0000, 0.00, 18},
          {0.1, 0.2100, 0.250, 0.410, 0.00, 0.3500, -0.15, 0},
          {0.1, 0.0460, 0.046, 0.050, 0.00, 0.1000, 0.25, 0},
          {0.1, 0.0460, 0.046, 0.050, 0.00, -0.1000, 0.25, 0},
          {0.1, 0.0460, 0.023, 0.050, -0.08, -0.6050, 0.00, 0},
          {0.1, 0.0230, 0.023, 0.020, 0.00, -0.6060, 0.00, 0},
          {0.1, 0.0230, 0.046, 0.020, 0.06, -0.6050, 0.00, 0}};
}

namespace {

double ball(double q) {
  const double pi = std::numbers::pi;
  if (q < 1e-4) return 4.0 * pi / 3.0 * (1.0 - 2.0 * pi * pi * q * q / 5.0);  // the series near 0
  const double t = 2.0 * pi * q;
  return (std::sin(t) - t * std::cos(t)) / (2.0 * pi * pi * q * q * q);
}

}  // namespace

std::complex<double> ellipsoids_fourier(const std::vector<Ellipsoid>& e, double kx, double ky, double kz) {
  const double pi = std::numbers::pi;
  std::complex<double> s = 0;
  for (const auto& el : e) {
    const double p = el.phi_deg * pi / 180.0, c = std::cos(p), sn = std::sin(p);
    // R(-phi) kappa, scaled by the semi-axes.
    const double u = (c * kx + sn * ky) * el.a, v = (-sn * kx + c * ky) * el.b, w = kz * el.c;
    const double q = std::sqrt(u * u + v * v + w * w);
    const double phase = -2.0 * pi * (kx * el.x0 + ky * el.y0 + kz * el.z0);
    s += el.intensity * el.a * el.b * el.c * ball(q) * std::complex<double>(std::cos(phase), std::sin(phase));
  }
  return s;
}

namespace {

bool inside(const Ellipsoid& el, double x, double y, double z) {
  const double p = el.phi_deg * std::numbers::pi / 180.0, c = std::cos(p), sn = std::sin(p);
  const double dx = x - el.x0, dy = y - el.y0, dz = z - el.z0;
  const double u = (c * dx + sn * dy) / el.a, w = (-sn * dx + c * dy) / el.b, t = dz / el.c;
  return u * u + w * w + t * t <= 1.0;
}

// Calls f(x, y, z) at the sub^3 points spread evenly over voxel (i, j, l) of the n^3 grid on [-1, 1]^3 (voxel
// n/2 centred at 0), all of them (f returns void) or until f returns false.
template <class F>
void for_each_sub_point(int i, int j, int l, int n, int sub, F&& f) {
  const double h = 2.0 / n;
  const auto at = [&](int idx, int q) { return (idx - n / 2) * h + ((q + 0.5) / sub - 0.5) * h; };
  for (int a = 0; a < sub; ++a)
    for (int b = 0; b < sub; ++b)
      for (int c = 0; c < sub; ++c) {
        if constexpr (std::is_void_v<decltype(f(0.0, 0.0, 0.0))>) {
          f(at(i, a), at(j, b), at(l, c));
        } else if (!f(at(i, a), at(j, b), at(l, c))) {
          return;
        }
      }
}

}  // namespace

double ellipsoids_value(const std::vector<Ellipsoid>& e, double x, double y, double z) {
  double v = 0;
  for (const auto& el : e)
    if (inside(el, x, y, z)) v += el.intensity;
  return v;
}

std::vector<float> rasterize_3d(const std::vector<Ellipsoid>& e, int n, int sub) {
  if (n < 1 || sub < 1) throw ConfigError("rasterize_3d: n and sub must be >= 1");
  std::vector<float> img(std::size_t(n) * n * n);
#pragma omp parallel for schedule(dynamic)
  for (int l = 0; l < n; ++l)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        double s = 0;
        for_each_sub_point(i, j, l, n, sub,
                           [&](double x, double y, double z) { s += ellipsoids_value(e, x, y, z); });
        img[(std::size_t(l) * n + j) * n + i] = float(s / (sub * sub * sub));
      }
  return img;
}

std::vector<int> region_labels_3d(const std::vector<Ellipsoid>& e, int n, int sub) {
  if (n < 1 || sub < 1) throw ConfigError("region_labels_3d: n and sub must be >= 1");
  if (e.size() > 30) throw ConfigError("region_labels_3d: at most 30 ellipsoids");
  std::vector<int> labels(std::size_t(n) * n * n);
#pragma omp parallel for schedule(static)
  for (int l = 0; l < n; ++l)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < n; ++i) {
        const std::size_t v = (std::size_t(l) * n + j) * n + i;
        int first = -1;
        bool mixed = false;
        for_each_sub_point(i, j, l, n, sub, [&](double x, double y, double z) {
          int mask = 0;
          for (std::size_t q = 0; q < e.size(); ++q)
            if (inside(e[q], x, y, z)) mask |= 1 << q;
          if (first < 0) first = mask;
          mixed = mask != first;
          return !mixed;
        });
        labels[v] = mixed ? -1 - int(v) : first;  // a voxel across a boundary is a region of its own
      }
  return labels;
}

std::vector<std::array<float, 3>> radial_3d(int spokes, int samples) {
  if (spokes < 1 || samples < 2) throw ConfigError("radial_3d: spokes >= 1 and samples >= 2");
  const double golden = std::numbers::pi * (3.0 - std::sqrt(5.0));
  std::vector<std::array<float, 3>> k;
  k.reserve(std::size_t(spokes) * samples);
  for (int s = 0; s < spokes; ++s) {
    const double z = 1.0 - (s + 0.5) / spokes, rho = std::sqrt(std::max(0.0, 1.0 - z * z)), phi = s * golden;
    const double dx = rho * std::cos(phi), dy = rho * std::sin(phi);
    for (int i = 0; i < samples; ++i) {
      const double r = (i + 0.5 - samples / 2.0) / samples;
      k.push_back({float(r * dx), float(r * dy), float(r * z)});
    }
  }
  return k;
}

Phantom3dCase phantom_3d_case(int n, int spokes, int samples, double noise_fraction, unsigned seed) {
  Phantom3dCase c;
  c.n = n;
  c.k = radial_3d(spokes, samples);
  const auto e = shepp_logan_3d();
  const double half = n / 2.0, scale = half * half * half;
  c.data.resize(c.k.size());
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < c.k.size(); ++i)
    c.data[i] = std::complex<float>(
        scale * ellipsoids_fourier(e, c.k[i][0] * half, c.k[i][1] * half, c.k[i][2] * half));
  if (noise_fraction > 0) {
    double ms = 0;
    for (const auto& v : c.data) ms += std::norm(v);
    const double sigma = noise_fraction * std::sqrt(ms / double(c.data.size()) / 2.0);
    std::mt19937 rng(seed);
    std::normal_distribution<double> g(0.0, sigma);
    for (auto& v : c.data) v += std::complex<float>(float(g(rng)), float(g(rng)));
  }
  c.truth = rasterize_3d(e, n, 2);
  return c;
}

ImageScore score_image(const std::vector<std::complex<float>>& image, const std::vector<float>& truth,
                       bool fit_scale) {
  if (image.size() != truth.size()) throw InputError("score_image: image and truth differ in size");
  ImageScore s;
  if (fit_scale) {
    std::complex<double> num = 0;
    double den = 0;
    for (std::size_t v = 0; v < truth.size(); ++v) {
      num += std::conj(std::complex<double>(image[v])) * double(truth[v]);
      den += std::norm(std::complex<double>(image[v]));
    }
    s.scale = den > 0 ? num / den : 1.0;
  }
  double err = 0, ref = 0, peak = 0;
  for (std::size_t v = 0; v < truth.size(); ++v) {
    err += std::norm(s.scale * std::complex<double>(image[v]) - double(truth[v]));
    ref += double(truth[v]) * truth[v];
    peak = std::max(peak, std::abs(double(truth[v])));
  }
  s.percent_error = 100.0 * std::sqrt(err / ref);
  s.psnr_db = 20.0 * std::log10(peak / std::sqrt(err / double(truth.size())));
  return s;
}

}  // namespace radstream
