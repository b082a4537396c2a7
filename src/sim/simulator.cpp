#include "sim/simulator.hpp"

#include <fmt/format.h>

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
  header_.partitions = p.partitions;
  header_.validate();
  if (p.partition_order != "linear" && p.partition_order != "centre-out")
    throw ConfigError("simulate.partition_order = " + p.partition_order + " (linear or centre-out)");
  if (p.partitions > 1) {
    if (p.slices > 1)
      throw ConfigError(
          fmt::format("simulate: partitions {} with slices {}: a stream is a stack of stars or "
                      "a set of slices, not both",
                      p.partitions, p.slices));
    stack_ = std::make_shared<StackPhantom>(p.coils, p.motion, p.motion_period_s);
  }
  // centre-out: kz = 0, +1, -1, +2, -2, ... (partition P/2 first), as centric phase encoding orders them.
  for (int q = 0; q < p.partitions; ++q) {
    const int step = (q + 1) / 2, sign = q % 2 ? 1 : -1;
    partition_order_.push_back(std::uint16_t(
        p.partition_order == "linear" ? q : (p.partitions / 2 + sign * step + p.partitions) % p.partitions));
  }
  if (p.snr > 0) {
    // Reference signal level: RMS over the samples and coils of 16 noiseless spokes evenly spread over 180
    // deg (in the centre partition of a stack of stars).
    constexpr int kAngles = 16;
    double sum = 0.0;
    Spoke s;
    s.samples = header_.samples;
    s.coils = p.coils;
    for (int a = 0; a < kAngles; ++a) {
      SpokeHeader h;
      h.angle = kPi * a / kAngles;
      h.partition = std::uint16_t(p.partitions / 2);
      fill_spoke(h, 0.0, s);
      for (const auto& v : s.data) sum += std::norm(v);
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

SpokeHeader Simulator::place(std::uint64_t global) const {
  SpokeHeader h;
  const auto slices = std::uint64_t(p_.slices), parts = std::uint64_t(p_.partitions);
  h.slice = std::uint16_t(global % slices);
  const std::uint64_t own = global / slices;  // the slice's own acquisition number
  h.spoke_index = own / parts;                // every partition of an angle shares its in-plane index
  h.partition = partition_order_[std::size_t(own % parts)];
  h.scan_counter = std::uint32_t(own);
  h.angle = header_.angles.angle(std::int64_t(h.spoke_index));
  if (p_.partition_rotation_deg != 0)  // partitions turned against each other (a rotated stack of stars)
    h.angle += double(h.partition) * p_.partition_rotation_deg * kPi / 180.0;
  return h;
}

void Simulator::fill_spoke(const SpokeHeader& h, double t, Spoke& s) const {
  const int S = s.samples, C = s.coils;
  s.traj.resize(2 * std::size_t(S));
  spoke_coordinates(h.angle, S, s.traj);
  s.data.assign(std::size_t(S) * C, cfloat());
  const double half = 0.5 * p_.matrix;
  if (stack_) {
    // kz in cycles per unit of the slab (it spans 2 units in P partitions): (partition - P/2) / 2. The scale
    // makes the inverse DFT along kz (1/sqrt(P), as BART's unitary transform) give each z position's 2D
    // transform at the 2D stream's (N/2)^2 scale.
    const int P = p_.partitions;
    const double kz = 0.5 * (double(h.partition) - double(P / 2));
    const double scale = half * half * std::sqrt(double(P)) / 2.0;
    const auto e = stack_->at(t);
    std::vector<std::complex<double>> v(static_cast<std::size_t>(C));
    for (int n = 0; n < S; ++n) {
      stack_->kspace_all(e, s.traj[2 * n] * half, s.traj[2 * n + 1] * half, kz, v.data());
      for (int c = 0; c < C; ++c) s.data[std::size_t(c) * S + n] = cfloat(scale * v[std::size_t(c)]);
    }
    return;
  }
  const auto e = ellipses_at(t, h.slice);
  const auto& f = coils_.frequencies();
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
}

Spoke Simulator::spoke(std::uint64_t global) const {
  Spoke s;
  s.samples = header_.samples;
  s.coils = p_.coils;
  const double t = double(global) / p_.rate_hz;
  s.header = place(global);
  s.header.acquired_ns = std::int64_t(t * 1e9);
  s.header.acquisition_time_stamp = std::uint32_t(t / 2.5e-3);
  fill_spoke(s.header, t, s);
  if (noise_sigma_ > 0) {
    const std::uint64_t own = global / std::uint64_t(p_.slices);
    std::mt19937_64 rng(p_.seed * 0x9E3779B97F4A7C15ull + own +
                        0x51ull * std::uint64_t(s.header.slice) * (1ull << 40));
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
