#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.hpp"
#include "core/trajectory.hpp"

using namespace radstream;

TEST(Trajectory, GoldenAngleIncrementIs111246Degrees) {
  AngleSpec s;
  s.scheme = AngleScheme::Golden;
  EXPECT_NEAR(s.increment() * 180.0 / kPi, 111.246117975, 1e-8);
  EXPECT_NEAR(s.angle(2) * 180.0 / kPi, std::fmod(2 * 111.246117975, 360.0), 1e-7);
}

TEST(Trajectory, TinyGoldenAnglesMatchTheirDefinition) {
  // 180 / (phi + N - 1): N = 2 -> 68.7539, 5 -> 32.0397, 10 -> 15.6464 degrees (Wundrak et al.)
  const double expected[] = {0,        0,        68.75388, 49.75077, 38.97762, 32.03967,
                             27.19840, 23.62814, 20.88643, 18.71484, 16.95229};
  for (int n = 2; n <= 10; ++n) {
    AngleSpec s;
    s.scheme = AngleScheme::TinyGolden;
    s.tiny_n = n;
    EXPECT_NEAR(s.increment() * 180.0 / kPi, 180.0 / (kGoldenRatio + n - 1), 1e-12);
    EXPECT_NEAR(s.increment() * 180.0 / kPi, expected[n], 1e-4) << "N = " << n;
  }
  AngleSpec bad;
  bad.scheme = AngleScheme::TinyGolden;
  bad.tiny_n = 11;
  EXPECT_THROW(bad.validate(), ConfigError);
}

TEST(Trajectory, LinearSchemesRepeatEveryRotation) {
  AngleSpec s;
  s.scheme = AngleScheme::Linear180;
  s.spokes_per_rotation = 16;
  EXPECT_NEAR(s.angle(1), kPi / 16, 1e-15);
  EXPECT_EQ(s.angle(3), s.angle(19));
  s.scheme = AngleScheme::Linear360;
  EXPECT_NEAR(s.angle(4), 2 * kPi * 4 / 16, 1e-15);
}

TEST(Trajectory, SpokeSpansHalfOpenUnitIntervalInCyclesPerPixel) {
  for (int samples : {128, 256, 512}) {  // 1x, 2x, 4x readout oversampling of a 128 matrix
    std::vector<float> xy(2 * samples);
    spoke_coordinates(0.0, samples, xy);
    EXPECT_FLOAT_EQ(xy[0], -0.5f);
    EXPECT_FLOAT_EQ(xy[2 * (samples / 2)], 0.f);                    // centre sample
    EXPECT_NEAR(xy[2 * (samples - 1)], 0.5 - 1.0 / samples, 1e-7);  // [-0.5, 0.5)
    EXPECT_NEAR(xy[2] - xy[0], 1.0 / samples, 1e-7);                // oversampling only densifies
  }
  std::vector<float> xy(8);
  spoke_coordinates(kPi / 2, 4, xy);
  EXPECT_NEAR(xy[0], 0.0, 1e-7);
  EXPECT_NEAR(xy[1], -0.5, 1e-7);
}

TEST(Trajectory, ParsesSchemeNamesAndRejectsOthers) {
  EXPECT_EQ(parse_angle_scheme("golden"), AngleScheme::Golden);
  EXPECT_EQ(parse_angle_scheme("tiny-golden"), AngleScheme::TinyGolden);
  try {
    parse_angle_scheme("spiral");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("spiral"), std::string::npos);
  }
}

// Real-time radial MRI's turns (BART's traj -r -t T, whose angle phi is the same; BART draws a spoke along
// (sin phi, cos phi), radstream along (cos phi, sin phi)): frame f of S spokes at pi (j + (f mod T)/T) / S,
// so T consecutive frames interleave into T S equally spaced angles over 180 degrees, and frame f + T repeats
// frame f bit for bit.
TEST(Trajectory, TurnsInterleaveTheirFramesAndRepeatAfterTFrames) {
  AngleSpec a;
  a.scheme = parse_angle_scheme("turns");
  a.spokes_per_rotation = 13;
  a.turns = 5;
  a.validate();
  EXPECT_EQ(to_string(a.scheme), "turns");
  EXPECT_DOUBLE_EQ(a.angle(0), 0.0);
  EXPECT_DOUBLE_EQ(a.angle(1), kPi / 13);
  EXPECT_DOUBLE_EQ(a.angle(13), kPi * (0.2) / 13);             // frame 1, spoke 0
  EXPECT_DOUBLE_EQ(a.angle(3 * 13 + 4), kPi * (4.6) / 13);     // frame 3, spoke 4
  EXPECT_DOUBLE_EQ(a.angle(7 * 13 + 5), a.angle(2 * 13 + 5));  // frame 7 = frame 2
  std::vector<double> all;
  for (int i = 0; i < 5 * 13; ++i) all.push_back(a.angle(i));
  std::sort(all.begin(), all.end());
  for (std::size_t k = 0; k < all.size(); ++k) EXPECT_NEAR(all[k], kPi * double(k) / 65, 1e-12) << k;
  a.turns = 0;
  EXPECT_THROW(a.validate(), ConfigError);
}
