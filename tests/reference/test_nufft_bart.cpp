// `radstream nufft` and `radstream nufft --adjoint` against `bart nufft` / `bart nufft -a`, run by the test
// on BART-made radial data (2D and a small 3D case) and on random 3D points: NRMSE after a complex scalar
// fit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>

#include "io/cfl.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

using test::bart;

void ours(const test::TempDir& dir, const std::string& args) {
  const auto r =
      test::run_command("cd " + dir.path().string() + " && " + test::radstream_binary() + " nufft " + args);
  ASSERT_EQ(r.exit_code, 0) << "radstream nufft " << args << "\n" << r.output;
}

// ||a - s b|| / ||a|| with the complex s that minimizes it; also returns s.
double fitted_nrmse(const std::string& a_path, const std::string& b_path,
                    std::complex<double>* scale = nullptr) {
  const CflArray a = read_cfl(a_path), b = read_cfl(b_path);
  EXPECT_EQ(a.data.size(), b.data.size());
  std::complex<double> num = 0;
  double den = 0, aa = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    num += std::conj(std::complex<double>(b.data[i])) * std::complex<double>(a.data[i]);
    den += std::norm(std::complex<double>(b.data[i]));
    aa += std::norm(std::complex<double>(a.data[i]));
  }
  const std::complex<double> s = num / den;
  double err = 0;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    err += std::norm(std::complex<double>(a.data[i]) - s * std::complex<double>(b.data[i]));
  if (scale) *scale = s;
  return std::sqrt(err / aa);
}

void write_random(const std::string& path, std::vector<long> dims, std::mt19937& rng, float lo, float hi,
                  bool real_only) {
  std::size_t n = 1;
  for (long d : dims) n *= std::size_t(d);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<cfloat> v(n);
  for (auto& c : v) c = cfloat(u(rng), real_only ? 0.f : u(rng));
  write_cfl(path, dims, v);
}

}  // namespace

TEST(NufftBart, Radial2dForwardAndAdjointMatchBart) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  bart(dir, "traj -r -x 64 -y 63 traj");  // +-32: BART units of a 64 x 64 image
  bart(dir, "phantom -x 64 -s 4 img");
  bart(dir, "nufft -d 64:64:1 traj img ksp_bart");
  ours(dir, "--traj traj img ksp_ours");
  std::complex<double> s;
  const double ef = fitted_nrmse(dir / "ksp_bart", dir / "ksp_ours", &s);
  std::printf("forward 2D radial, 4 coils: NRMSE %.2e, scale %.4f%+.4fi\n", ef, s.real(), s.imag());
  EXPECT_LE(ef, 1e-2);
  EXPECT_NEAR(std::abs(s), 1.0, 2e-2) << "BART's 1/sqrt(N^2) scaling";

  bart(dir, "nufft -a -d 64:64:1 traj ksp_bart img_bart");
  ours(dir, "--adjoint --dims 64:64 --traj traj ksp_bart img_ours");
  const double ea = fitted_nrmse(dir / "img_bart", dir / "img_ours", &s);
  std::printf("adjoint 2D radial, 4 coils: NRMSE %.2e, scale %.4f%+.4fi\n", ea, s.real(), s.imag());
  EXPECT_LE(ea, 1e-2);
  EXPECT_NEAR(std::abs(s), 1.0, 2e-2);
}

TEST(NufftBart, Radial3dForwardAndAdjointMatchBart) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  bart(dir, "traj -r -3 -x 16 -y 48 traj");
  bart(dir, "phantom -3 -x 16 img");
  bart(dir, "nufft -d 16:16:16 traj img ksp_bart");
  ours(dir, "-t traj img ksp_ours");
  const double ef = fitted_nrmse(dir / "ksp_bart", dir / "ksp_ours");
  std::printf("forward 3D radial 16^3: NRMSE %.2e\n", ef);
  EXPECT_LE(ef, 1e-2);
  bart(dir, "nufft -a -d 16:16:16 traj ksp_bart img_bart");
  ours(dir, "-a -d 16:16:16 -t traj ksp_bart img_ours");
  const double ea = fitted_nrmse(dir / "img_bart", dir / "img_ours");
  std::printf("adjoint 3D radial 16^3: NRMSE %.2e\n", ea);
  EXPECT_LE(ea, 1e-2);
}

// Random points filling the cube and white data: BART's periodic mode (-P) is the exact NUDFT that ours
// computes (its default mode departs from it near the cube's faces).
TEST(NufftBart, Random3dPointsMatchBartPeriodic) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  std::mt19937 rng(5);
  write_random(dir / "traj", {3, 600, 1}, rng, -8.f, 7.99f, true);
  write_random(dir / "img", {16, 16, 16}, rng, -1.f, 1.f, false);
  write_random(dir / "ksp", {1, 600, 1}, rng, -1.f, 1.f, false);
  bart(dir, "nufft -P -d 16:16:16 traj img ksp_bart");
  ours(dir, "-t traj img ksp_ours");
  const double ef = fitted_nrmse(dir / "ksp_bart", dir / "ksp_ours");
  bart(dir, "nufft -P -a -d 16:16:16 traj ksp img_bart");
  ours(dir, "-a -d 16:16:16 -t traj ksp img_ours");
  const double ea = fitted_nrmse(dir / "img_bart", dir / "img_ours");
  std::printf("random 3D points vs bart -P: forward NRMSE %.2e, adjoint %.2e\n", ef, ea);
  EXPECT_LE(ef, 1e-2);
  EXPECT_LE(ea, 1e-2);
}

TEST(NufftCli, BadDimsAndTrajectoryAreNamed) {
  test::TempDir dir;
  std::mt19937 rng(1);
  write_random(dir / "traj", {2, 10, 1}, rng, -4.f, 4.f, true);
  write_random(dir / "traj3", {3, 10, 1}, rng, -4.f, 4.f, true);
  write_random(dir / "ksp", {1, 10, 1}, rng, -1.f, 1.f, false);
  auto r = test::run_command(test::radstream_binary() + " nufft -a -d 8:7 -t " + (dir / "traj3") + " " +
                             (dir / "ksp") + " " + (dir / "out"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("8:7"), std::string::npos) << r.output;
  r = test::run_command(test::radstream_binary() + " nufft -a -d 8:8 -t " + (dir / "traj") + " " +
                        (dir / "ksp") + " " + (dir / "out"));
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("3 coordinates"), std::string::npos) << r.output;
}
