// Parity with BART, run by the test itself: radial data from `bart traj` + `bart phantom -k`, BART's
// ramp-weighted adjoint `bart nufft -a` + `bart rss` against `radstream recon`; and the real scanner data
// sets.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/image_stats.hpp"
#include "reference_util.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

using test::bart;

using reftest::mag;
using reftest::radstream_recon;

// BART's reference: ramp weights |k| on the data, adjoint NUFFT, root-sum-of-squares over coils (dim 3).
void bart_ramp_adjoint(const test::TempDir& dir, const std::string& traj, const std::string& ksp, int N,
                       const std::string& out) {
  bart(dir, "rss 1 " + traj + " ramp_w");
  bart(dir, "fmac " + ksp + " ramp_w ksp_w");
  bart(dir, fmt::format("nufft -a -d {}:{}:1 {} ksp_w coil_img", N, N, traj));
  bart(dir, "rss 8 coil_img " + out);
}

}  // namespace

TEST(Bart, RampAdjointParityOnBartPhantom8Coils) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  const int N = 128;
  bart(dir, fmt::format("traj -r -x {} -y 201 traj_os", 2 * N));  // 2x readout oversampling
  bart(dir, "scale 0.5 traj_os traj");                            // +-N/2: BART units of an N x N image
  bart(dir, "phantom -k -s 8 -t traj ksp");
  bart_ramp_adjoint(dir, "traj", "ksp", N, "bart_img");
  radstream_recon(dir,
                  fmt::format("--traj traj.cfl --kspace ksp.cfl --matrix {} --dcf ramp --out ours.cfl", N));
  const double e = nrmse_scaled(mag(dir / "ours"), mag(dir / "bart_img"));
  std::printf("radstream vs bart nufft -a (8 coils, 201 spokes, 128^2): NRMSE %.5f\n", e);
  EXPECT_LE(e, 3e-2);
}

TEST(Bart, NoWorseThanBartAgainstTheTruePhantom) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  const int N = 128;
  bart(dir, fmt::format("traj -r -x {} -y 201 traj_os", 2 * N));
  bart(dir, "scale 0.5 traj_os traj");
  bart(dir, "phantom -k -t traj ksp");  // one coil: the combined image is the phantom itself
  bart(dir, fmt::format("phantom -x {} truth", N));
  bart_ramp_adjoint(dir, "traj", "ksp", N, "bart_img");
  radstream_recon(
      dir, fmt::format("--traj traj.cfl --kspace ksp.cfl --matrix {} --dcf ramp-dc --out ours.cfl", N));
  const auto truth = mag(dir / "truth");
  const double ours = nrmse_scaled(mag(dir / "ours"), truth);
  const double theirs = nrmse_scaled(mag(dir / "bart_img"), truth);
  std::printf("vs true phantom: radstream %.7f, bart %.7f\n", ours, theirs);
  EXPECT_LE(ours, theirs);
}

TEST(Bart, RealCardiacDataMatchesBart) {
  RADSTREAM_REQUIRE_REAL_DATA("cardiac-25spokes-12coils");
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  const auto src = test::real_data("cardiac-25spokes-12coils");
  bart(dir, "copy " + (src / "traj").string() + " traj");
  bart(dir, "copy " + (src / "ksp").string() + " ksp");
  bart_ramp_adjoint(dir, "traj", "ksp", 256, "bart_img");
  radstream_recon(dir, "--traj traj.cfl --kspace ksp.cfl --matrix 256 --dcf ramp --out ours.cfl");
  radstream_recon(dir, "--traj traj.cfl --kspace ksp.cfl --matrix 256 --out ours.png");
  const double e = nrmse_scaled(mag(dir / "ours"), mag(dir / "bart_img"));
  std::printf("real cardiac data (25 spokes, 12 coils): NRMSE vs bart %.5f\n", e);
  EXPECT_LE(e, 3e-2);
  EXPECT_TRUE(std::filesystem::exists(dir / "ours.png"));
}

TEST(Bart, RealRadialFlashPhantomMatchesBart) {
  RADSTREAM_REQUIRE_REAL_DATA("phantom-radial-flash-16coils");
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  const auto src = test::real_data("phantom-radial-flash-16coils");
  // 384 samples (2x oversampled, 192^2 image), 69 spokes over 360 degrees, gradient-delay corrected
  // trajectory.
  bart(dir, "traj -x 384 -y 69 -D -q -0.614225:-0.651670:-0.000881 traj_os");
  bart(dir, "scale 0.5 traj_os traj");
  bart(dir, "copy " + (src / "kMB1_top_SP69").string() + " k_raw");  // [384 69 1 16]
  bart(dir, "reshape 7 1 384 69 k_raw ksp");                         // BART's [1 384 69 16]
  bart_ramp_adjoint(dir, "traj", "ksp", 192, "bart_img");
  // radstream reads the raw layout directly (its non-singleton dimensions are samples, spokes, coils).
  radstream_recon(dir, "--traj traj.cfl --kspace k_raw.cfl --matrix 192 --dcf ramp --out ours.cfl");
  const double e = nrmse_scaled(mag(dir / "ours"), mag(dir / "bart_img"));
  std::printf("real radial FLASH phantom (69 spokes, 16 coils): NRMSE vs bart %.5f\n", e);
  EXPECT_LE(e, 3e-2);
}
