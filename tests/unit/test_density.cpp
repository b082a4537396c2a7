#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <vector>

#include "core/trajectory.hpp"
#include "stages/density/density.hpp"

using namespace radstream;

namespace {
std::vector<float> radial_traj(const AngleSpec& a, int spokes, int samples) {
  std::vector<float> t(std::size_t(spokes) * samples * 2);
  for (int p = 0; p < spokes; ++p)
    spoke_coordinates(a.angle(p), samples,
                      std::span<float>(t.data() + std::size_t(p) * samples * 2, samples * 2));
  return t;
}
double sum(const std::vector<float>& w) {
  return std::accumulate(w.begin(), w.end(), 0.0);
}
}  // namespace

TEST(Density, RampWeightsIntegrateToTheDiscArea) {
  AngleSpec a;
  a.scheme = AngleScheme::Linear180;
  a.spokes_per_rotation = 128;
  const int S = 256;
  const auto t = radial_traj(a, 128, S);
  std::vector<float> w(128 * S);
  compute_density_weights(DcfMethod::RampDc, t, 128, S, w);
  // The samples reach |k| = 0.5 (one side) and 0.5 - 1/S: the covered disc has radius 0.5 (+- half a sample).
  const double dk = 1.0 / S;
  EXPECT_NEAR(sum(w), M_PI * 0.25, M_PI * 0.5 * dk * 1.01);
  compute_density_weights(DcfMethod::Ramp, t, 128, S, w);
  EXPECT_NEAR(sum(w), M_PI * 0.25, M_PI * 0.5 * dk * 1.01);
  // The plain ramp gives the centre nothing; ramp-dc gives it its disc, pi (dk/2)^2 over the P spokes.
  EXPECT_EQ(w[S / 2], 0.f);
  compute_density_weights(DcfMethod::RampDc, t, 128, S, w);
  EXPECT_NEAR(w[S / 2], M_PI * 0.25 * dk * dk / 128, 1e-12);
}

TEST(Density, VoronoiOfFullRadialSetEqualsAnalyticAnnularSectors) {
  AngleSpec a;
  a.scheme = AngleScheme::Linear180;
  a.spokes_per_rotation = 64;
  const int P = 64, S = 128;
  const auto t = radial_traj(a, P, S);
  std::vector<float> w(P * S);
  compute_density_weights(DcfMethod::Voronoi, t, P, S, w);
  const double dk = 1.0 / S, dphi = M_PI / P;  // 2P half-spokes over 2 pi
  for (int p = 0; p < P; p += 7)
    for (int n = 1; n < S - 1; ++n) {
      const double r = std::abs(radial_position(n, S));
      double expect;
      if (n == S / 2)
        expect = M_PI * 0.25 * dk * dk / P;  // centre disc shared by all spokes
      else
        expect = 0.5 * dphi * ((r + dk / 2) * (r + dk / 2) - (r - dk / 2) * (r - dk / 2));  // = dphi r dk
      EXPECT_NEAR(w[p * S + n], expect, 1e-5 * expect)
          << "spoke " << p << " sample " << n;  // float coordinates
    }
  // The cells tile the disc of radius 0.5 + dk/2 on the negative side, 0.5 - dk/2 on the positive side.
  const double ro_neg = 0.5 + dk / 2, ro_pos = 0.5 - dk / 2;
  EXPECT_NEAR(sum(w), 0.5 * M_PI * (ro_neg * ro_neg + ro_pos * ro_pos), 1e-5);
}

TEST(Density, VoronoiOfGoldenAnglesTilesTheDiscAndFollowsGaps) {
  AngleSpec a;
  a.scheme = AngleScheme::Golden;
  const int P = 55, S = 64;
  const auto t = radial_traj(a, P, S);
  std::vector<float> w(P * S);
  compute_density_weights(DcfMethod::Voronoi, t, P, S, w);
  const double dk = 1.0 / S, ro_neg = 0.5 + dk / 2, ro_pos = 0.5 - dk / 2;
  EXPECT_NEAR(sum(w), 0.5 * M_PI * (ro_neg * ro_neg + ro_pos * ro_pos), 1e-5);
  // Uneven angles: weights differ between spokes at the same radius (unlike the ramp).
  double lo = 1e9, hi = 0;
  for (int p = 0; p < P; ++p) {
    lo = std::min<double>(lo, w[p * S + 10]);
    hi = std::max<double>(hi, w[p * S + 10]);
  }
  EXPECT_GT(hi / lo, 1.2);
}

TEST(Density, ParsesNamesAndRejectsOthers) {
  EXPECT_EQ(parse_dcf("ramp-dc"), DcfMethod::RampDc);
  EXPECT_THROW(parse_dcf("pipe"), ConfigError);
}
