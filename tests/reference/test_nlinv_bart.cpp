// NLINV against BART, run by the test: turn-based radial data from `bart traj -r -t 5` and
// `bart phantom -k -s 8 -t`, ten frames (two rounds of the five turns); radstream recon --method nlinv and
// bart rtnlinv with the same Newton steps on the same data, each against the truth (the phantom's coil
// images combined by root-sum-of-squares, after a scalar fit) over the converged frames; and one frame
// against plain `bart nlinv`.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/image_stats.hpp"
#include "reference_util.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

using test::bart;

constexpr int kN = 64;

// Frame f of a [N N 1 ... frames] series, magnitudes.
std::vector<float> frame_mag(const CflArray& a, int f) {
  const std::size_t px = std::size_t(kN) * kN;
  return magnitude(std::span<const cfloat>(a.data.data() + px * std::size_t(f), px));
}

void make_series(const test::TempDir& dir) {
  bart(dir, fmt::format("traj -r -x {} -y 13 -t 5 traj_os", 2 * kN));
  bart(dir, "scale 0.5 traj_os traj");  // +-N/2: BART units of an N x N image
  bart(dir, "phantom -k -s 8 -t traj ksp5");
  bart(dir, "join 10 ksp5 ksp5 ksp");  // frames 5..9 repeat the turns of frames 0..4
  bart(dir, fmt::format("phantom -x {} -s 8 coil_truth", kN));
  bart(dir, "rss 8 coil_truth truth");
}

}  // namespace

TEST(NlinvBart, TheTimeSeriesIsAsGoodAsBartsRtnlinv) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_series(dir);
  bart(dir, "rtnlinv -i 6 -t traj ksp bart_out");
  reftest::radstream_recon(dir, "--method nlinv --newton 6 --traj traj --kspace ksp --out ours");
  const CflArray ours = read_cfl((dir.path() / "ours").string());
  const CflArray theirs = read_cfl((dir.path() / "bart_out").string());
  ASSERT_EQ(ours.dims.size() > 10 ? ours.dims[10] : 1, 10);
  ASSERT_EQ(ours.dim(0), kN);
  const auto truth = magnitude(read_cfl((dir.path() / "truth").string()).data);
  double ours_sum = 0, theirs_sum = 0;
  for (int f = 0; f < 10; ++f) {
    const auto a = frame_mag(ours, f), b = frame_mag(theirs, f);
    EXPECT_LT(nrmse_scaled(a, b), 0.01) << "frame " << f << ": radstream and BART differ";
    if (f >= 5) {
      ours_sum += nrmse_scaled(a, truth);
      theirs_sum += nrmse_scaled(b, truth);
    }
  }
  RecordProperty("nrmse_ours", fmt::format("{:.4f}", ours_sum / 5));
  RecordProperty("nrmse_bart", fmt::format("{:.4f}", theirs_sum / 5));
  EXPECT_LE(ours_sum, 1.05 * theirs_sum) << ours_sum / 5 << " vs BART " << theirs_sum / 5;
  // Temporal regularization at work: the converged frames are better than the first.
  EXPECT_LT(ours_sum / 5, nrmse_scaled(frame_mag(ours, 0), truth));
}

TEST(NlinvBart, OneFrameIsBartsNlinv) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_series(dir);
  bart(dir, "slice 10 0 traj traj1");
  bart(dir, "slice 10 0 ksp5 ksp1");
  bart(dir, "nlinv -i 6 -t traj1 ksp1 bart_one bart_sens");
  bart(dir, fmt::format("resize -c 0 {} 1 {} bart_sens bart_sens_n", kN, kN));  // BART's are on the 2x grid
  reftest::radstream_recon(
      dir, "--method nlinv --newton 6 --traj traj1 --kspace ksp1 --out ours_one --sens-out ours_sens");
  const auto a = reftest::mag((dir.path() / "ours_one").string());
  const auto b = reftest::mag((dir.path() / "bart_one").string());
  ASSERT_EQ(a.size(), std::size_t(kN) * kN);
  EXPECT_LT(nrmse_scaled(a, b), 0.01);
  // The estimated sensitivities, [N N 1 coils]: BART's (cropped to the FOV) within 2%.
  const CflArray ours_sens = read_cfl((dir.path() / "ours_sens").string());
  ASSERT_EQ(ours_sens.dim(0), kN);
  ASSERT_EQ(ours_sens.dim(3), 8);
  const auto sa = magnitude(ours_sens.data);
  const auto sb = reftest::mag((dir.path() / "bart_sens_n").string());
  ASSERT_EQ(sa.size(), sb.size());
  EXPECT_LT(nrmse_scaled(sa, sb), 0.02);
}

// Coil compression: radstream's --virtual-coils 4 (principal components of the first frame) against BART
// given BART's own compression of the same data (bart cc -p 4 -A, all frames): the same error against the
// truth within 5%.
TEST(NlinvBart, CompressedCoilsAreAsGoodAsBartsCc) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_series(dir);
  bart(dir, "cc -p 4 -A ksp ksp_cc");
  bart(dir, "rtnlinv -i 6 -t traj ksp_cc bart_cc");
  reftest::radstream_recon(
      dir, "--method nlinv --newton 6 --virtual-coils 4 --traj traj --kspace ksp --out ours_cc");
  const CflArray ours = read_cfl((dir.path() / "ours_cc").string());
  const CflArray theirs = read_cfl((dir.path() / "bart_cc").string());
  const auto truth = magnitude(read_cfl((dir.path() / "truth").string()).data);
  double ours_sum = 0, theirs_sum = 0;
  for (int f = 5; f < 10; ++f) {
    ours_sum += nrmse_scaled(frame_mag(ours, f), truth);
    theirs_sum += nrmse_scaled(frame_mag(theirs, f), truth);
  }
  std::printf("compressed to 4 coils: radstream %.4f, BART %.4f (mean NRMSE of frames 5..9)\n", ours_sum / 5,
              theirs_sum / 5);
  EXPECT_LE(ours_sum, 1.05 * theirs_sum);
}

// The 1.5x grid (faster; its Toeplitz embedding wraps) on the same series: the converged frames' error
// against the truth within 5% of the 2x grid's.
TEST(NlinvBart, TheOnePointFiveGridIsAsAccurateAsTheTwoGrid) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_series(dir);
  reftest::radstream_recon(dir, "--method nlinv --newton 6 --traj traj --kspace ksp --out os2");
  reftest::radstream_recon(dir,
                           "--method nlinv --newton 6 --grid-os 1.5 --traj traj --kspace ksp --out os15");
  const CflArray a = read_cfl((dir.path() / "os2").string());
  const CflArray b = read_cfl((dir.path() / "os15").string());
  const auto truth = magnitude(read_cfl((dir.path() / "truth").string()).data);
  double two = 0, one_five = 0;
  for (int f = 5; f < 10; ++f) {
    two += nrmse_scaled(frame_mag(a, f), truth);
    one_five += nrmse_scaled(frame_mag(b, f), truth);
  }
  std::printf("grid 2x: %.4f, grid 1.5x: %.4f (mean NRMSE of frames 5..9)\n", two / 5, one_five / 5);
  EXPECT_LE(one_five, 1.05 * two);
}
