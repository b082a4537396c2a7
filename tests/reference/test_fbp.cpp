// Filtered backprojection against the true phantom (no worse than the gridding path by more than 10 % at the
// Nyquist number of spokes), against the gridding path on the same data (NRMSE after a scalar fit, recorded
// and bounded), over linear 180/360-degree and golden-angle sets, odd sample counts, every filter, and the
// real data sets (checked against the gridding result).
#include <gtest/gtest.h>

#include <cmath>

#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/image_stats.hpp"
#include "recon/recon_chain.hpp"
#include "sim/phantom.hpp"
#include "sim/simulator.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

ReconParams params(ReconMethod m, const char* dcf = "ramp-dc") {
  ReconParams p;
  p.method = m;
  p.backend = BackendChoice::Cpu;
  p.fft.planner = FftPlanner::Estimate;
  p.density.method = parse_dcf(dcf);
  return p;
}

std::vector<float> recon(const ReconParams& p, const Frame& f) {
  ReconChain chain(p, Backend::Cpu, default_registry());
  chain.configure(f.geometry);
  return magnitude(chain.reconstruct(f).span());
}

Frame phantom_frame(int N, int spokes, const char* angles, double os = 2.0, int coils = 1) {
  SimParams s;
  s.matrix = N;
  s.coils = coils;
  s.angles = angles;
  s.readout_os = os;
  s.spokes_per_rotation = spokes;
  const Simulator sim(s);
  return frame_from_spokes(sim.header(), sim.spokes(0, spokes));
}

}  // namespace

TEST(Fbp, PhantomAtTheNyquistNumberOfSpokesIsAsGoodAsGridding) {
  const auto truth = rasterize(modified_shepp_logan(), 128, 4);
  for (const char* angles : {"linear180", "linear360", "golden"}) {
    const Frame f = phantom_frame(128, 202, angles);
    const double grid = nrmse_scaled(recon(params(ReconMethod::Gridding, "voronoi"), f), truth);
    const double fbp = nrmse_scaled(recon(params(ReconMethod::Fbp), f), truth);
    std::printf("phantom 128^2, 202 %s spokes, vs truth: gridding %.4f, FBP %.4f (ratio %.3f)\n", angles,
                grid, fbp, fbp / grid);
    EXPECT_LE(fbp, 1.10 * grid) << angles;
  }
}

TEST(Fbp, AgreesWithGriddingOnTheSameData) {
  for (auto [angles, os] :
       std::vector<std::pair<const char*, double>>{{"golden", 2.0}, {"linear180", 255.0 / 128}}) {
    const Frame f = phantom_frame(128, 160, angles, os, 6);  // 6 coils; the second set: 255 (odd) samples
    const auto g = recon(params(ReconMethod::Gridding, "voronoi"), f);
    const auto b = recon(params(ReconMethod::Fbp), f);
    const double e = nrmse_scaled(b, g);
    std::printf("FBP vs gridding, 160 %s spokes x %d samples x 6 coils: NRMSE %.4f\n", angles,
                f.geometry.samples, e);
    EXPECT_LE(e, 0.05) << angles;
    // Absolute intensities agree too (no scalar fit): the filter is the ramp of the density weights.
    EXPECT_LE(relative_error(b, g), 0.06) << angles;
  }
}

TEST(Fbp, EveryFilterAndCutoffReconstructs) {
  const auto truth = rasterize(modified_shepp_logan(), 64, 4);
  const Frame f = phantom_frame(64, 101, "golden");
  double prev = 0;
  for (const char* filt : {"ram-lak", "shepp-logan", "hann"}) {
    auto p = params(ReconMethod::Fbp);
    p.fbp.filter = parse_fbp_filter(filt);
    const double e = nrmse_scaled(recon(p, f), truth);
    std::printf("FBP %s vs truth at 64^2: %.4f\n", filt, e);
    EXPECT_LT(e, 0.35) << filt;
    p.fbp.cutoff = 0.5;  // half the bandwidth: a blurrier image, further from the sharp phantom
    const double half = nrmse_scaled(recon(p, f), truth);
    EXPECT_GT(half, e) << filt;
    prev = e;
  }
  static_cast<void>(prev);
  EXPECT_THROW(parse_fbp_filter("cosine"), ConfigError);
}

namespace {

void recon_cli(const test::TempDir& dir, const std::string& args) {
  const auto r = test::run_command("cd " + dir.path().string() + " && " + test::radstream_binary() +
                                   " recon --backend cpu " + args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

std::vector<float> mag(const std::string& path) {
  return magnitude(read_cfl(path).data);
}

}  // namespace

TEST(Fbp, RealCardiacDataReconstructsLikeGridding) {
  RADSTREAM_REQUIRE_REAL_DATA("cardiac-25spokes-12coils");
  test::TempDir dir;
  const auto src = test::real_data("cardiac-25spokes-12coils");
  const std::string in = "--traj " + (src / "traj.cfl").string() + " --kspace " + (src / "ksp.cfl").string();
  recon_cli(dir, in + " --matrix 256 --dcf ramp --out grid.cfl");
  recon_cli(dir, in + " --matrix 256 --method fbp --out fbp.cfl");
  const double e = nrmse_scaled(mag(dir / "fbp"), mag(dir / "grid"));
  std::printf("real cardiac data (25 spokes, 12 coils): FBP vs gridding NRMSE %.4f\n", e);
  EXPECT_LE(e, 0.08);
}

TEST(Fbp, RealRadialFlashReconstructsLikeGridding) {
  RADSTREAM_REQUIRE_REAL_DATA("phantom-radial-flash-16coils");
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  const auto src = test::real_data("phantom-radial-flash-16coils");
  test::bart(dir, "traj -x 384 -y 69 -D -q -0.614225:-0.651670:-0.000881 traj_os");
  test::bart(dir, "scale 0.5 traj_os traj");
  const std::string in = "--traj traj.cfl --kspace " + (src / "kMB1_top_SP69.cfl").string();
  recon_cli(dir, in + " --matrix 192 --dcf ramp --out grid.cfl");
  recon_cli(dir, in + " --matrix 192 --method fbp --out fbp.cfl");
  const double e = nrmse_scaled(mag(dir / "fbp"), mag(dir / "grid"));
  std::printf(
      "real radial FLASH phantom (69 spokes over 360 deg, 16 coils, gradient delays): FBP vs gridding %.4f\n",
      e);
  EXPECT_LE(e, 0.08);
}

TEST(Fbp, OddSampleCountsAndSpokesWithoutACentreSample) {
  // Spokes of 255 samples (odd), and spokes shifted by half a sample (no sample at k = 0, like the cardiac
  // data), both built from the exact phantom k-space.
  SimParams sp;
  sp.matrix = 96;
  sp.coils = 1;
  const Simulator sim(sp);
  const auto ell = sim.ellipses_at(0.0);
  const auto truth = rasterize(modified_shepp_logan(), 96, 4);
  for (auto [S, shift] : std::vector<std::pair<int, double>>{{191, 0.0}, {192, 0.5}}) {
    const int P = 151;
    Geometry g{96, S, P, 1, float(S) / 96};
    Frame f(g);
    for (int p = 0; p < P; ++p) {
      const double th = 3.14159265358979 * p / P;
      for (int n = 0; n < S; ++n) {
        const double k = (n - S / 2 + shift) / S;
        const double kx = k * std::cos(th), ky = k * std::sin(th);
        f.traj[(std::size_t(p) * S + n) * 2] = float(kx);
        f.traj[(std::size_t(p) * S + n) * 2 + 1] = float(ky);
        f.data[std::size_t(p) * S + n] = cfloat(sim.kspace(ell, 0, kx, ky));
      }
    }
    const double grid = nrmse_scaled(recon(params(ReconMethod::Gridding, "voronoi"), f), truth);
    const double fbp = nrmse_scaled(recon(params(ReconMethod::Fbp), f), truth);
    std::printf("%d samples, shift %.1f: vs truth gridding %.4f, FBP %.4f\n", S, shift, grid, fbp);
    EXPECT_LE(fbp, 1.10 * grid) << S;
  }
}
