#include "sim/stack_phantom.hpp"

#include <cmath>

#include "core/math.hpp"

namespace radstream {

StackPhantom::StackPhantom(int coils, bool motion, double motion_period_s)
    : maps_(coils), motion_(motion), period_s_(motion_period_s) {
  // One coil is uniform; with several, half peak towards +z and half towards -z (a quarter period over the
  // slab's half-depth), each with its own phase, so that the maps differ along z as an array's do.
  for (int c = 0; c < coils; ++c) {
    const double amp = coils == 1 ? 0.0 : 0.4;
    a_.push_back(std::polar(amp, 1.3 * c));
    g_.push_back(c % 2 ? 0.25 : -0.25);
  }
}

std::array<double, 3> StackPhantom::tip_at(double t) const {
  const double w = 2.0 * kPi * t / period_s_;
  return {0.3 * std::sin(w), 0.15 + 0.2 * std::sin(2.0 * w), 0.3 * std::cos(w)};
}

std::vector<Ellipsoid> StackPhantom::at(double t) const {
  auto e = shepp_logan_3d();
  if (motion_) {
    const auto c = tip_at(t);
    // A contrast-filled tip, twice the skull's intensity: a volume's voxels are larger than a plane's pixels
    // (64^2 x 16 puts 4 pixels and 2 partitions across it), and partial volume dims what is not much larger.
    // Taller than wide, as partitions are thicker than pixels in a typical slab.
    e.push_back({2.0, 0.06, 0.06, 0.15, c[0], c[1], c[2], 0.0});
  }
  return e;
}

std::complex<double> StackPhantom::kspace(const std::vector<Ellipsoid>& e, int coil, double kx, double ky,
                                          double kz) const {
  const auto& f = maps_.frequencies();
  std::complex<double> v = 0.0;
  const auto a = a_[std::size_t(coil)];
  const double g = g_[std::size_t(coil)];
  for (std::size_t l = 0; l < f.size(); ++l) {
    const double ux = kx - f[l][0], uy = ky - f[l][1];
    std::complex<double> s = ellipsoids_fourier(e, ux, uy, kz);
    if (a != 0.0) s += a * ellipsoids_fourier(e, ux, uy, kz - g);
    v += maps_.coefficient(coil, int(l)) * s;
  }
  return v;
}

void StackPhantom::kspace_all(const std::vector<Ellipsoid>& e, double kx, double ky, double kz,
                              std::complex<double>* out) const {
  const auto& f = maps_.frequencies();
  const int C = maps_.coils();
  for (int c = 0; c < C; ++c) out[c] = 0.0;
  for (std::size_t l = 0; l < f.size(); ++l) {
    const double ux = kx - f[l][0], uy = ky - f[l][1];
    const std::complex<double> F = ellipsoids_fourier(e, ux, uy, kz);
    // The z profiles' two shifts (g = +-1/4): one transform each, shared by the coils that use it.
    const std::complex<double> up = C > 1 ? ellipsoids_fourier(e, ux, uy, kz - 0.25) : 0.0,
                               down = C > 1 ? ellipsoids_fourier(e, ux, uy, kz + 0.25) : 0.0;
    for (int c = 0; c < C; ++c) {
      const std::complex<double> a = a_[std::size_t(c)];
      const std::complex<double> shifted = g_[std::size_t(c)] > 0 ? up : down;
      out[c] += maps_.coefficient(c, int(l)) * (a != 0.0 ? F + a * shifted : F);
    }
  }
}

std::complex<double> StackPhantom::sensitivity(int coil, double x, double y, double z) const {
  const double ph = 2.0 * kPi * g_[std::size_t(coil)] * z;
  return maps_.value(coil, x, y) *
         (1.0 + a_[std::size_t(coil)] * std::complex<double>(std::cos(ph), std::sin(ph)));
}

}  // namespace radstream
