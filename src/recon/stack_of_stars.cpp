#include "recon/stack_of_stars.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>

#include "core/error.hpp"
#include "io/frame_io.hpp"

namespace radstream {

namespace {

constexpr double kGridTolerance = 1e-3;  // BART units: kz off the integer grid, in-plane mismatch

// kz of every spoke, checked constant along the spoke and whole.
std::vector<long> spoke_kz(const CflArray& traj, const std::string& what) {
  const long S = traj.dim(1), spokes = traj.dim(2);
  std::vector<long> kz(static_cast<std::size_t>(spokes));
  for (long j = 0; j < spokes; ++j) {
    const double k0 = traj.data[std::size_t(3 * S * j + 2)].real();
    if (!std::isfinite(k0)) throw IoError(fmt::format("{}: spoke {}: kz is not finite", what, j));
    for (long s = 1; s < S; ++s) {
      const double k = traj.data[std::size_t(3 * (S * j + s) + 2)].real();
      if (!(std::abs(k - k0) <= kGridTolerance))
        throw ConfigError(fmt::format(
            "{}: spoke {}: kz varies along the spoke ({} at sample 0, {} at sample {}): not a stack of "
            "stars, whose spokes lie in kz planes (a 3D radial trajectory goes through radstream nufft)",
            what, j, k0, k, s));
    }
    if (std::abs(k0 - std::round(k0)) > kGridTolerance)
      throw ConfigError(fmt::format(
          "{}: spoke {}: kz = {} is not on the partition grid (whole numbers in BART units)", what, j, k0));
    kz[std::size_t(j)] = std::lround(k0);
  }
  return kz;
}

// Every sampled partition holds as many spokes as the first one sampled; the layout is rotated when their
// in-plane coordinates differ.
void check_aligned(const CflArray& traj, StackLayout& l, const std::string& what) {
  const long S = l.samples;
  const std::vector<long>* first = nullptr;
  int first_p = -1;
  for (int p = 0; p < l.partitions; ++p) {
    const auto& spokes = l.spokes_of[std::size_t(p)];
    if (spokes.empty()) continue;
    if (!first) {
      first = &spokes;
      first_p = p;
      continue;
    }
    if (spokes.size() != first->size())
      throw ConfigError(fmt::format(
          "{}: partition kz = {} has {} spokes, partition kz = {} has {}: a stack of stars needs the same "
          "spokes in every partition",
          what, p - l.partitions / 2, spokes.size(), first_p - l.partitions / 2, first->size()));
    if (l.rotated) continue;  // the first difference is named; the spoke counts are still checked
    for (std::size_t j = 0; j < spokes.size(); ++j)
      for (long s = 0; s < S; ++s)
        for (int d = 0; d < 2; ++d) {
          const float a = traj.data[std::size_t(3 * (S * spokes[j] + s) + d)].real();
          const float b = traj.data[std::size_t(3 * (S * (*first)[j] + s) + d)].real();
          if (!(std::abs(a - b) <= kGridTolerance) && !l.rotated) {
            l.rotated = true;
            l.rotation = fmt::format(
                "{}: spoke {} (the {}th of partition kz = {}) is not spoke {} of partition kz = {} turned by "
                "nothing",
                what, spokes[j], j, p - l.partitions / 2, (*first)[j], first_p - l.partitions / 2);
          }
        }
  }
}

}  // namespace

std::optional<StackLayout> stack_of_stars_layout(const CflArray& traj, int partitions,
                                                 const std::string& what) {
  if (traj.dims.empty() || traj.dim(0) != 3)
    throw IoError(fmt::format("{}: trajectory dimensions must be [3 samples spokes], not [{}]", what,
                              fmt::join(traj.dims, " ")));
  if (partitions == 0 || partitions < -1)
    throw ConfigError(
        fmt::format("--partitions {}: the volume depth must be >= 1 (-1: from the trajectory)", partitions));
  const std::vector<long> kz = spoke_kz(traj, what);
  const auto [kmin, kmax] = std::minmax_element(kz.begin(), kz.end());
  const bool flat = *kmin == 0 && *kmax == 0;
  if (flat && partitions <= 1) return std::nullopt;
  StackLayout l;
  l.partitions = partitions > 0 ? partitions : int(std::max({2L, -2 * *kmin, 2 * *kmax + 2}));
  l.samples = int(traj.dim(1));
  l.spokes_of.resize(std::size_t(l.partitions));
  const long half = l.partitions / 2;
  for (std::size_t j = 0; j < kz.size(); ++j) {
    const long p = kz[j] + half;
    if (p < 0 || p >= l.partitions)
      throw ConfigError(fmt::format(
          "{}: spoke {}: kz = {} lies outside the {} partitions asked for (kz from {} to {}); leave "
          "--partitions out to read the depth from the trajectory",
          what, j, kz[j], l.partitions, -half, l.partitions - 1 - half));
    l.spokes_of[std::size_t(p)].push_back(long(j));
  }
  check_aligned(traj, l, what);
  for (const auto& s : l.spokes_of)
    if (!s.empty()) l.spokes_per_partition = int(s.size());
  return l;
}

std::vector<Frame> stack_frames(const StackLayout& l, const CflArray& traj, const CflArray& kspace,
                                int matrix, const std::string& what) {
  if (l.rotated)
    throw ConfigError(
        l.rotation +
        ": partitions rotated against each other are not supported by this method; gridding, and "
        "cg-sense with --sens maps, reconstruct them (through the 3D NUFFT), or give every "
        "partition the same in-plane angles");
  const long S = l.samples, spokes = traj.dim(2), J = l.spokes_per_partition, P = l.partitions;
  const long C = long(kspace.data.size()) / std::max(1L, S * spokes);
  if (kspace.dim(0) != 1 || kspace.dim(1) != S || kspace.dim(2) != spokes ||
      C * S * spokes != long(kspace.data.size()))
    throw IoError(
        fmt::format("{}: k-space dimensions [{}] do not match the trajectory's {} samples x {} spokes "
                    "(expected [1 {} {} coils])",
                    what, fmt::join(kspace.dims, " "), S, spokes, S, spokes));
  // The in-plane trajectory (the first sampled partition's, kz dropped), read through frame_from_bart with
  // one coil of zeros so that the checks of a 2D input (|k| within the matrix, finite values) apply; the
  // frames then have the data's coils.
  long first = 0;
  while (l.spokes_of[std::size_t(first)].empty()) ++first;
  CflArray plane{{3, S, J}, std::vector<cfloat>(std::size_t(3 * S * J))};
  for (long j = 0; j < J; ++j) {
    const long src = l.spokes_of[std::size_t(first)][std::size_t(j)];
    for (long s = 0; s < S; ++s)
      for (int d = 0; d < 2; ++d)
        plane.data[std::size_t(3 * (S * j + s) + d)] = traj.data[std::size_t(3 * (S * src + s) + d)];
  }
  for (std::size_t i = 0; i < kspace.data.size(); ++i)
    if (!std::isfinite(kspace.data[i].real()) || !std::isfinite(kspace.data[i].imag()))
      throw IoError(fmt::format("{}: k-space value {} is NaN or Inf", what, i));
  const CflArray zeros{{1, S, J}, std::vector<cfloat>(std::size_t(S * J))};
  const Frame templ = frame_from_bart(plane, zeros, matrix, what);
  Geometry g = templ.geometry;
  g.coils = int(C);
  try {
    g.validate();  // the coils, as frame_from_bart checks them
  } catch (const ConfigError& e) {
    throw IoError(fmt::format("{}: {}", what, e.what()));
  }
  std::vector<Frame> out;
  out.reserve(std::size_t(P));
  for (long z = 0; z < P; ++z) {
    Frame f(g);
    std::copy(templ.traj.begin(), templ.traj.end(), f.traj.begin());
    f.spoke_index = templ.spoke_index;
    out.push_back(std::move(f));
  }
  // z and kz both centred at P/2 (BART's centre of an FFT grid): image(z) = sum_p y(p) e^{i 2 pi kz (z - P/2)
  // / P}. Each z position is summed by one thread (nothing here throws).
  const double scale = 1.0 / std::sqrt(double(P));
#pragma omp parallel for schedule(dynamic)
  for (long z = 0; z < P; ++z) {
    Frame& f = out[std::size_t(z)];
    for (long p = 0; p < P; ++p) {
      const auto& rows = l.spokes_of[std::size_t(p)];
      if (rows.empty()) continue;
      const double phase = 2 * std::numbers::pi * double((p - P / 2) * (z - P / 2)) / double(P);
      const std::complex<float> w(float(scale * std::cos(phase)), float(scale * std::sin(phase)));
      for (long c = 0; c < C; ++c)
        for (long j = 0; j < J; ++j) {
          const cfloat* in = kspace.data.data() + S * (rows[std::size_t(j)] + spokes * c);
          cfloat* o = f.data.data() + S * (j + J * c);
          for (long s = 0; s < S; ++s) o[s] += w * in[s];
        }
    }
  }
  return out;
}

}  // namespace radstream
