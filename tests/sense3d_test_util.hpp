// Shared by the 3D SENSE tests (CPU and GPU): trajectories, smooth coil maps, the rasterized 3D phantom and
// k-space from the exact NUDFT in double.
#pragma once
#include <array>
#include <cmath>
#include <complex>
#include <vector>

#include "core/math.hpp"
#include "sim/nudft.hpp"
#include "sim/phantom3d.hpp"

namespace radstream::sense3d {

using cf = std::complex<float>;

// Full spokes through the centre along a golden spiral over the sphere, samples in [-0.5, 0.5).
inline std::vector<float> kooshball(int spokes, int samples) {
  std::vector<float> t;
  for (int s = 0; s < spokes; ++s) {
    const double z = 1.0 - (s + 0.5) / spokes, r = std::sqrt(1.0 - z * z);
    const double phi = s * kPi * (3.0 - std::sqrt(5.0));
    for (int i = 0; i < samples; ++i) {
      const double k = (i - samples / 2) / double(samples);
      t.push_back(float(k * r * std::cos(phi)));
      t.push_back(float(k * r * std::sin(phi)));
      t.push_back(float(k * z));
    }
  }
  return t;
}

// Golden-angle spokes in-plane on each of `partitions` Cartesian kz lines.
inline std::vector<float> stack_of_stars(int spokes, int samples, int partitions) {
  std::vector<float> t;
  for (int p = 0; p < partitions; ++p)
    for (int s = 0; s < spokes; ++s) {
      const double phi = s * kPi * 0.6180339887498949;
      for (int i = 0; i < samples; ++i) {
        const double k = (i - samples / 2) / double(samples);
        t.push_back(float(k * std::cos(phi)));
        t.push_back(float(k * std::sin(phi)));
        t.push_back(float((p - partitions / 2) / double(partitions)));
      }
    }
  return t;
}

// Coils around the volume: Gaussian profiles centred on the faces, each with a linear phase,
// [coils][z][y][x].
inline std::vector<cf> smooth_maps(std::array<int, 3> N, int coils) {
  std::vector<cf> m;
  for (int c = 0; c < coils; ++c) {
    const double a = 2 * kPi * c / coils;
    const double cx = 0.7 * std::cos(a), cy = 0.7 * std::sin(a), cz = c % 2 ? 0.4 : -0.4;
    for (int z = 0; z < N[2]; ++z)
      for (int y = 0; y < N[1]; ++y)
        for (int x = 0; x < N[0]; ++x) {
          const double px = (x - N[0] / 2) * 2.0 / N[0], py = (y - N[1] / 2) * 2.0 / N[1],
                       pz = (z - N[2] / 2) * 2.0 / N[2];
          const double d2 = (px - cx) * (px - cx) + (py - cy) * (py - cy) + (pz - cz) * (pz - cz);
          const double mag = std::exp(-d2 / 1.5), ph = 0.8 * (px * std::cos(a) + py * std::sin(a)) + 0.3 * c;
          m.push_back(cf(float(mag * std::cos(ph)), float(mag * std::sin(ph))));
        }
  }
  return m;
}

inline std::vector<cf> phantom(int n) {
  const auto r = rasterize_3d(shepp_logan_3d(), n);
  return std::vector<cf>(r.begin(), r.end());
}

// The phantom with its DFT cut to the ball |k| <= radius (cycles per pixel): what a kooshball, which never
// samples the cube's corners, can recover (and a stack of stars, whose discs hold that ball). Direct DFTs in
// double (n^6 terms: small n only).
inline std::vector<cf> bandlimited_phantom(int n, double radius) {
  const auto x = phantom(n);
  const std::size_t v = x.size();
  auto coord = [n](std::size_t i, int a) {
    const int q = a == 0 ? int(i % n) : a == 1 ? int(i / n % n) : int(i / (std::size_t(n) * n));
    return q - n / 2;
  };
  std::vector<std::complex<double>> X(v);
  for (std::size_t k = 0; k < v; ++k) {
    const double kx = coord(k, 0) / double(n), ky = coord(k, 1) / double(n), kz = coord(k, 2) / double(n);
    if (kx * kx + ky * ky + kz * kz > radius * radius) continue;
    std::complex<double> s = 0;
    for (std::size_t p = 0; p < v; ++p) {
      const double ph = -2 * kPi * (kx * coord(p, 0) + ky * coord(p, 1) + kz * coord(p, 2));
      s += std::complex<double>(x[p]) * std::complex<double>(std::cos(ph), std::sin(ph));
    }
    X[k] = s;
  }
  std::vector<cf> out(v);
  for (std::size_t p = 0; p < v; ++p) {
    std::complex<double> s = 0;
    for (std::size_t k = 0; k < v; ++k) {
      if (X[k] == 0.0) continue;
      const double ph =
          2 * kPi * (coord(k, 0) * coord(p, 0) + coord(k, 1) * coord(p, 1) + coord(k, 2) * coord(p, 2)) / n;
      s += X[k] * std::complex<double>(std::cos(ph), std::sin(ph));
    }
    out[p] = cf(s / double(v));
  }
  return out;
}

// y_c = exact forward NUDFT of S_c x, [coils][points].
inline std::vector<cf> exact_data(const std::vector<float>& traj, const std::vector<cf>& x,
                                  const std::vector<cf>& maps, std::array<int, 3> N, int coils) {
  const std::size_t v = x.size();
  std::vector<cf> y;
  for (int c = 0; c < coils; ++c) {
    std::vector<cf> sx(v);
    for (std::size_t i = 0; i < v; ++i) sx[i] = maps[c * v + i] * x[i];
    for (const auto& s : forward_nudft(traj, 3, sx, N)) y.push_back(cf(s));
  }
  return y;
}

}  // namespace radstream::sense3d
