// Gradient delays (noncart/gradient_delay.hpp) against BART, which the tests run: the triple means what
// `bart traj -q` means (applied to the nominal trajectory it gives BART's delayed one); RING on BART-made
// data with known delays finds them (and agrees with `bart estdelay -R`); the corrected image is as good as
// one of undelayed data; and a stream corrects itself (`run --gradient-delay auto`).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/cfl.hpp"
#include "noncart/gradient_delay.hpp"
#include "test_util.hpp"

using namespace radstream;
using radstream::test::bart;

namespace {

GradientDelays parse_triple(const std::string& out) {
  // The last line that reads a:b:c.
  std::istringstream in(out);
  std::string line, last;
  while (std::getline(in, line))
    if (std::count(line.begin(), line.end(), ':') == 2 && line.find('[') == std::string::npos) last = line;
  return parse_gradient_delays(last, "output");
}

std::vector<float> traj_of(const CflArray& t) {  // BART [3 S P] -> [P][S][2]
  const long S = t.dim(1), P = t.dim(2);
  std::vector<float> v(std::size_t(P * S * 2));
  for (long i = 0; i < P * S; ++i) {
    v[std::size_t(2 * i)] = t.data[std::size_t(3 * i)].real();
    v[std::size_t(2 * i + 1)] = t.data[std::size_t(3 * i + 1)].real();
  }
  return v;
}

double image_error(const CflArray& x, const CflArray& ref) {  // after the best real scale
  double xr = 0, xx = 0;
  for (std::size_t i = 0; i < ref.data.size(); ++i) {
    xr += std::abs(x.data[i]) * std::abs(ref.data[i]);
    xx += std::norm(x.data[i]);
  }
  const double s = xr / xx;
  double e = 0, n = 0;
  for (std::size_t i = 0; i < ref.data.size(); ++i) {
    e += std::pow(s * std::abs(x.data[i]) - std::abs(ref.data[i]), 2);
    n += std::norm(ref.data[i]);
  }
  return std::sqrt(e / n);
}

}  // namespace

TEST(GradientDelay, TheTripleMeansWhatBartTrajQMeans) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  bart(dir, "traj -x 64 -y 37 -r -G t");
  bart(dir, "traj -x 64 -y 37 -r -G -q 0.4:-0.7:0.25 tq");
  std::vector<float> t = traj_of(read_cfl(dir / "t"));
  const std::vector<float> tq = traj_of(read_cfl(dir / "tq"));
  apply_gradient_delays(t, 64, 37, {0.4, -0.7, 0.25});
  double worst = 0;
  for (std::size_t i = 0; i < t.size(); ++i) worst = std::max(worst, double(std::abs(t[i] - tq[i])));
  EXPECT_LE(worst, 1e-4);
}

TEST(GradientDelay, RingFindsBartMadeDelaysAndAgreesWithBartEstdelay) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  // 63 linear spokes, 8 coils, no noise: the case where bart estdelay -R (-r 2) itself is near the truth.
  bart(dir, "traj -x 128 -y 63 -r -q 0.3:-0.2:0.1 tq");
  bart(dir, "traj -x 128 -y 63 -r t");
  bart(dir, "phantom -s 8 -k -t tq k");
  const auto ours = test::run_command(bin + " estdelay --traj " + (dir / "t") + " --kspace " + (dir / "k"));
  ASSERT_EQ(ours.exit_code, 0) << ours.output;
  const GradientDelays d = parse_triple(ours.output);
  std::printf("radstream estdelay: %s (truth 0.3:-0.2:0.1)\n", d.str().c_str());
  EXPECT_NEAR(d.x, 0.3, 0.02);
  EXPECT_NEAR(d.y, -0.2, 0.02);
  EXPECT_NEAR(d.xy, 0.1, 0.02);
  const auto theirs = test::run_command("cd " + dir.path().string() + " && bart estdelay -R -r 2 t k");
  ASSERT_EQ(theirs.exit_code, 0) << theirs.output;
  const GradientDelays b = parse_triple(theirs.output);
  std::printf("bart estdelay -R -r 2: %s\n", b.str().c_str());
  EXPECT_NEAR(d.x, b.x, 0.1);
  EXPECT_NEAR(d.y, b.y, 0.1);
  EXPECT_NEAR(d.xy, b.xy, 0.1);
  // 15 golden-angle spokes with noise (a real-time frame): still within 0.1 sample of the truth.
  bart(dir, "traj -x 256 -y 15 -r -G -q -0.5:0.8:-0.3 tq2");
  bart(dir, "traj -x 256 -y 15 -r -G t2");
  bart(dir, "phantom -s 8 -k -t tq2 k2");
  bart(dir, "noise -n 100 k2 k2n");
  const auto few = test::run_command(bin + " estdelay --traj " + (dir / "t2") + " --kspace " + (dir / "k2n"));
  ASSERT_EQ(few.exit_code, 0) << few.output;
  const GradientDelays f = parse_triple(few.output);
  std::printf("15 spokes with noise: %s (truth -0.5:0.8:-0.3)\n", f.str().c_str());
  EXPECT_NEAR(f.x, -0.5, 0.1);
  EXPECT_NEAR(f.y, 0.8, 0.1);
  EXPECT_NEAR(f.xy, -0.3, 0.1);
}

TEST(GradientDelay, TheCorrectedImageIsAsGoodAsOneOfUndelayedData) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  bart(dir, "traj -x 128 -y 63 -r -q 0.6:-0.5:0.3 tq");
  bart(dir, "traj -x 128 -y 63 -r t");
  bart(dir, "phantom -s 8 -k -t tq k");
  bart(dir, "phantom -s 8 -k -t t k0");
  bart(dir, "phantom -x 128 -s 8 coils");
  bart(dir, "rss 8 coils ref");
  auto recon = [&](const std::string& k, const std::string& gd, const std::string& out) {
    const auto r =
        test::run_command(bin + " recon --traj " + (dir / "t") + " --kspace " + (dir / k) +
                          " --matrix 128 --threads 1 --gradient-delay " + gd + " --out " + (dir / out));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  };
  recon("k0", "off", "undelayed.cfl");
  recon("k", "off", "uncorrected.cfl");
  recon("k", "auto", "corrected.cfl");
  const CflArray ref = read_cfl(dir / "ref");
  const double e0 = image_error(read_cfl(dir / "undelayed"), ref);
  const double eu = image_error(read_cfl(dir / "uncorrected"), ref);
  const double ec = image_error(read_cfl(dir / "corrected"), ref);
  std::printf("image error: undelayed %.4f, delayed uncorrected %.4f, corrected by RING %.4f\n", e0, eu, ec);
  EXPECT_LE(ec, 1.1 * e0);
  EXPECT_GT(eu, ec * 1.05);
}

TEST(GradientDelay, AStreamEstimatesItsDelaysAndCorrectsItsSpokes) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  bart(dir, "traj -x 128 -y 63 -r -q 0.3:-0.2:0.1 tq");
  bart(dir, "traj -x 128 -y 63 -r t");
  bart(dir, "phantom -s 8 -k -t tq k");
  const auto c = test::run_command(bin + " convert --traj " + (dir / "t") + " --kspace " + (dir / "k") +
                                   " --matrix 128 --repeat 3 --rate 200 --out " + (dir / "delayed.h5"));
  ASSERT_EQ(c.exit_code, 0) << c.output;
  const auto r = test::run_command(
      "(" + bin + " run --headless --endpoint tcp://127.0.0.1:26187 --window 63 --stride 21 " +
      "--no-skip --gradient-delay auto --gradient-delay-every 2 --until-close --duration 30 --images '' " +
      "--metrics-json " + (dir / "m.json") + " & pid=$!; sleep 1; " + bin + " replay " +
      (dir / "delayed.h5") + " --endpoint tcp://127.0.0.1:26187; wait $pid)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream f(dir / "m.json");
  const auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j.contains("gradient_delay")) << r.output;
  // Estimated when 64 spokes have come, then every 2 frames of 21 spokes: at 106 and 148 of the 189 spokes
  // (paced at 200 spokes/s; one due while the last still runs waits for it).
  EXPECT_GE(j["gradient_delay"]["estimates"].get<int>(), 2);
  EXPECT_LE(j["gradient_delay"]["estimates"].get<int>(), 3);
  EXPECT_NEAR(j["gradient_delay"]["x"].get<double>(), 0.3, 0.03);
  EXPECT_NEAR(j["gradient_delay"]["y"].get<double>(), -0.2, 0.03);
  EXPECT_NEAR(j["gradient_delay"]["xy"].get<double>(), 0.1, 0.03);
  EXPECT_NE(r.output.find("gradient delays estimated by RING"), std::string::npos) << r.output;
}
