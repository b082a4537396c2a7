#include "sim/simulator.hpp"

#include <cmath>
#include <random>

#include "core/error.hpp"
#include "core/math.hpp"
#include "core/param_reader.hpp"

namespace radstream {

SimParams SimParams::from_config(const YAML::Node& node) {
  SimParams p;
  ParamReader reader(node, "simulate");
  p.visit(reader);
  reader.finish();
  return p;
}

Simulator::Simulator(const SimParams& p) : p_(p), coils_(p.coils) {
  ParamChecker check("simulate");
  SimParams copy = p;
  copy.visit(check);
  header_.matrix = p.matrix;
  header_.samples = int(std::lround(p.readout_os * p.matrix));
  if (header_.samples % 2) ++header_.samples;
  header_.coils = p.coils;
  header_.readout_os = float(p.readout_os);
  header_.fov_mm = p.fov_mm;
  header_.angles.scheme = parse_angle_scheme(p.angles);
  header_.angles.tiny_n = p.tiny_n;
  header_.angles.spokes_per_rotation = p.spokes_per_rotation;
  header_.angles.turns = p.turns;
  header_.spoke_rate_hz = p.rate_hz;
  header_.validate();
  if (p.snr > 0) {
    // Reference signal level: RMS over the samples and coils of 16 noiseless spokes evenly spread over 180
    // deg.
    const auto e = ellipses_at(0.0);
    constexpr int kAngles = 16;
    double sum = 0.0;
    for (int a = 0; a < kAngles; ++a) {
      const double th = kPi * a / kAngles;
      for (int c = 0; c < p.coils; ++c)
        for (int n = 0; n < header_.samples; ++n) {
          const double r = radial_position(n, header_.samples);
          sum += std::norm(kspace(e, c, r * std::cos(th), r * std::sin(th)));
        }
    }
    noise_sigma_ = std::sqrt(sum / (double(kAngles) * p.coils * header_.samples)) / p.snr;
  }
}

std::vector<Ellipse> Simulator::ellipses_at(double t, int slice) const {
  auto e = modified_shepp_logan();
  if (p_.motion) {
    const double w = 2.0 * kPi * t / p_.motion_period_s;
    e.push_back(catheter_tip(0.3 * std::sin(w), 0.15 + 0.2 * std::sin(2.0 * w)));
  }
  if (slice > 0) {  // another plane: turned by slice x 90 degrees, 8 % smaller per slice
    const double th = 0.5 * kPi * slice, c = std::cos(th), sn = std::sin(th), k = 1.0 - 0.08 * slice;
    for (auto& el : e) {
      const double x = el.x0, y = el.y0;
      el.x0 = k * (c * x - sn * y);
      el.y0 = k * (sn * x + c * y);
      el.a *= k;
      el.b *= k;
      el.phi_deg += 90.0 * slice;
    }
  }
  return e;
}

std::complex<double> Simulator::kspace(const std::vector<Ellipse>& e, int coil, double kx, double ky) const {
  // k in cycles/pixel -> kappa in cycles per FOV unit (the FOV spans 2 units = N pixels); the (N/2)^2 factor
  // makes the density-compensated adjoint reproduce the phantom's intensities.
  const double half = 0.5 * p_.matrix;
  const double kappa_x = kx * half, kappa_y = ky * half;
  std::complex<double> v = 0.0;
  const auto& f = coils_.frequencies();
  for (std::size_t l = 0; l < f.size(); ++l)
    v += coils_.coefficient(coil, int(l)) * ellipses_fourier(e, kappa_x - f[l][0], kappa_y - f[l][1]);
  return v * half * half;
}

Spoke Simulator::spoke(std::uint64_t global) const {
  const int S = header_.samples, C = p_.coils;
  Spoke s;
  s.samples = S;
  s.coils = C;
  const double t = double(global) / p_.rate_hz;
  const int slice = int(global % std::uint64_t(p_.slices));
  const std::uint64_t index = global / std::uint64_t(p_.slices);  // the slice's own spoke number
  s.header.slice = std::uint16_t(slice);
  s.header.spoke_index = index;
  s.header.scan_counter = std::uint32_t(index);
  s.header.angle = header_.angles.angle(std::int64_t(index));
  s.header.acquired_ns = std::int64_t(t * 1e9);
  s.header.acquisition_time_stamp = std::uint32_t(t / 2.5e-3);
  s.traj.resize(2 * std::size_t(S));
  spoke_coordinates(s.header.angle, S, s.traj);
  s.data.resize(std::size_t(S) * C);
  const auto e = ellipses_at(t, slice);
  const auto& f = coils_.frequencies();
  const double half = 0.5 * p_.matrix;
  std::vector<std::complex<double>> F(f.size());
  for (int n = 0; n < S; ++n) {
    const double kx = s.traj[2 * n] * half, ky = s.traj[2 * n + 1] * half;
    for (std::size_t l = 0; l < f.size(); ++l) F[l] = ellipses_fourier(e, kx - f[l][0], ky - f[l][1]);
    for (int c = 0; c < C; ++c) {
      std::complex<double> v = 0.0;
      for (std::size_t l = 0; l < f.size(); ++l) v += coils_.coefficient(c, int(l)) * F[l];
      s.data[std::size_t(c) * S + n] = cfloat(v * half * half);
    }
  }
  if (noise_sigma_ > 0) {
    std::mt19937_64 rng(p_.seed * 0x9E3779B97F4A7C15ull + index +
                        0x51ull * std::uint64_t(slice) * (1ull << 40));
    std::normal_distribution<float> g(0.f, float(noise_sigma_ / std::sqrt(2.0)));
    for (auto& v : s.data) v += cfloat(g(rng), g(rng));
  }
  return s;
}

std::vector<Spoke> Simulator::spokes(std::uint64_t first, int count) const {
  std::vector<Spoke> out(std::max(count, 0));
#pragma omp parallel for schedule(dynamic, 4)
  for (int i = 0; i < count; ++i) out[i] = spoke(first + std::uint64_t(i));
  return out;
}

}  // namespace radstream
