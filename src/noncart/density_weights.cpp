// Density compensation weights on the CPU (density_weights.hpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/trajectory.hpp"
#include "noncart/density_weights.hpp"
#include "noncart/radial_geometry.hpp"

namespace radstream {

namespace {

// Signed position of a sample along its spoke's axis.
double along(const float* t, int n, const SpokeAxis& a) {
  return t[2 * n] * a.dx + t[2 * n + 1] * a.dy;
}

void ramp(bool dc, std::span<const float> traj, int spokes, int samples, std::span<float> w) {
  const double per_spoke = kPi / spokes;  // angular share of each half-spoke
  for (int p = 0; p < spokes; ++p) {
    const float* t = traj.data() + std::size_t(p) * samples * 2;
    const SpokeAxis a = spoke_axis(t, samples);
    for (int n = 0; n < samples; ++n) {
      double r = std::hypot(double(t[2 * n]), double(t[2 * n + 1]));
      // The centre sample's disc of radius dk/2 shared by the P spokes: pi dk^2 / (4 P) = (pi/P) dk (dk/4).
      if (dc) r = std::max(r, a.spacing / 4);
      w[std::size_t(p) * samples + n] = float(per_spoke * a.spacing * r);
    }
  }
}

void voronoi(std::span<const float> traj, int spokes, int samples, std::span<float> w) {
  // Half-spoke directions: the positive side of spoke p points along theta_p, the negative side along theta_p
  // + pi.
  struct Half {
    double theta;
    int id;  // 2 p (+ 1 for the negative side)
  };
  std::vector<SpokeAxis> axes(spokes);
  std::vector<Half> halves;
  halves.reserve(2 * spokes);
  for (int p = 0; p < spokes; ++p) {
    axes[p] = spoke_axis(traj.data() + std::size_t(p) * samples * 2, samples);
    double th = std::atan2(axes[p].dy, axes[p].dx);
    if (th < 0) th += 2 * kPi;
    halves.push_back({th, 2 * p});
    halves.push_back({std::fmod(th + kPi, 2 * kPi), 2 * p + 1});
  }
  std::sort(halves.begin(), halves.end(), [](const Half& a, const Half& b) { return a.theta < b.theta; });
  // Angular width of each half-spoke: half the gaps to its neighbours; coincident directions share one width.
  const int H = int(halves.size());
  std::vector<double> width(H, 0.0);
  constexpr double kSame = 1e-9;
  for (int i = 0; i < H;) {
    int j = i;
    while (j + 1 < H && halves[j + 1].theta - halves[i].theta < kSame) ++j;
    const double prev = halves[i].theta - halves[(i - 1 + H) % H].theta + (i == 0 ? 2 * kPi : 0.0);
    const double next = halves[(j + 1) % H].theta - halves[j].theta + (j == H - 1 ? 2 * kPi : 0.0);
    const double share = (H == j - i + 1) ? 2 * kPi / H : 0.5 * (prev + next) / (j - i + 1);
    for (int k = i; k <= j; ++k) width[k] = share;
    i = j + 1;
  }
  std::vector<double> half_width(H);
  for (int i = 0; i < H; ++i) half_width[halves[i].id] = width[i];

  std::vector<double> s(samples);
  std::vector<int> order(samples);
  for (int p = 0; p < spokes; ++p) {
    const float* t = traj.data() + std::size_t(p) * samples * 2;
    const SpokeAxis& a = axes[p];
    for (int n = 0; n < samples; ++n) s[n] = along(t, n, a);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int x, int y) { return s[x] < s[y]; });
    const double centre_tol = 1e-6 * a.spacing;
    for (int i = 0; i < samples; ++i) {
      const int n = order[i];
      const double r = std::abs(s[n]);
      double area;
      if (r <= centre_tol) {
        // The centre sample: the disc up to half-way to its neighbours, shared by all spokes.
        double rn = a.spacing;
        if (i + 1 < samples) rn = std::abs(s[order[i + 1]]);
        area = kPi * 0.25 * rn * rn / spokes;
      } else {
        // Neighbours along the same half-spoke: toward the centre and away from it.
        const int inward = s[n] > 0 ? i - 1 : i + 1;
        const int outward = s[n] > 0 ? i + 1 : i - 1;
        double r_in = 0.0;
        if (inward >= 0 && inward < samples) {
          const double si = s[order[inward]];
          r_in = (si * s[n] > 0 || std::abs(si) <= centre_tol) ? 0.5 * (r + std::abs(si)) : 0.0;
        }
        double r_out;
        if (outward >= 0 && outward < samples)
          r_out = 0.5 * (r + std::abs(s[order[outward]]));
        else
          r_out = r + 0.5 * a.spacing;
        const double phi = half_width[2 * p + (s[n] < 0 ? 1 : 0)];
        area = 0.5 * phi * (r_out * r_out - r_in * r_in);
      }
      w[std::size_t(p) * samples + n] = float(area);
    }
  }
}

}  // namespace

void compute_density_weights(DcfMethod method, std::span<const float> traj, int spokes, int samples,
                             std::span<float> w) {
  const std::size_t n = std::size_t(spokes) * samples;
  if (spokes < 1 || samples < 2 || traj.size() < 2 * n || w.size() < n)
    throw InputError("compute_density_weights: trajectory or weight buffer does not match " +
                     std::to_string(spokes) + " spokes x " + std::to_string(samples) + " samples");
  switch (method) {
    case DcfMethod::None:
      std::fill(w.begin(), w.begin() + n, 1.f);
      break;
    case DcfMethod::Ramp:
      ramp(false, traj, spokes, samples, w);
      break;
    case DcfMethod::RampDc:
      ramp(true, traj, spokes, samples, w);
      break;
    case DcfMethod::Voronoi:
      voronoi(traj, spokes, samples, w);
      break;
  }
}

}  // namespace radstream
