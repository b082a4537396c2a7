// `radstream recon` on a stack of stars in BART's layout (golden-angle spokes repeated in each kz partition,
// the partitions in shuffled order): the volume against BART's 3D adjoint NUFFT and `bart pics`, run by the
// test on BART-made data, and the layout errors named.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <numbers>
#include <numeric>
#include <random>
#include <string>

#include "io/cfl.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

using test::bart;

constexpr int kN = 32, kSamples = 64, kSpokes = 21, kP = 16;

test::CommandResult recon(const test::TempDir& dir, const std::string& args) {
  return test::run_command("cd " + dir.path().string() + " && " + test::radstream_binary() + " recon " +
                           args);
}

// traj [3 samples spokes*P]: BART's golden-angle star `t2` in every partition, kz = p - P/2, the partitions
// in a shuffled order. kz_of(p) may move a partition off the grid (error tests).
void write_stack(const test::TempDir& dir, const std::string& name, int P,
                 const std::function<float(int, int, int)>& kz_of = {}) {
  const CflArray t2 = read_cfl(dir / "t2");
  std::vector<int> order(static_cast<std::size_t>(P));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  const long S = t2.dim(1), J = t2.dim(2);
  std::vector<cfloat> tr(std::size_t(3 * S * J * P));
  for (int i = 0; i < P; ++i)
    for (long j = 0; j < J; ++j)
      for (long s = 0; s < S; ++s) {
        const std::size_t o = std::size_t(3 * (S * (J * i + j) + s)), in = std::size_t(3 * (S * j + s));
        tr[o] = t2.data[in];
        tr[o + 1] = t2.data[in + 1];
        const int p = order[std::size_t(i)];
        tr[o + 2] = kz_of ? kz_of(p, int(j), int(s)) : float(p - P / 2);
      }
  write_cfl(dir / name, {3, S, J * P}, tr);
}

// Magnitudes: ||a - s b|| / ||a|| with the real s that minimizes it. a may hold coils along BART's dim 3
// (then their root sum of squares).
double fitted_magnitude_nrmse(const std::string& a_path, const std::string& b_path) {
  const CflArray a = read_cfl(a_path), b = read_cfl(b_path);
  const std::size_t n = b.data.size();
  EXPECT_EQ(a.data.size() % n, 0u);
  std::vector<double> am(n, 0.0), bm(n);
  for (std::size_t i = 0; i < a.data.size(); ++i) am[i % n] += std::norm(std::complex<double>(a.data[i]));
  double ab = 0, bb = 0, aa = 0;
  for (std::size_t i = 0; i < n; ++i) {
    am[i] = std::sqrt(am[i]);
    bm[i] = std::abs(std::complex<double>(b.data[i]));
    ab += am[i] * bm[i];
    bb += bm[i] * bm[i];
    aa += am[i] * am[i];
  }
  const double s = ab / bb;
  double err = 0;
  for (std::size_t i = 0; i < n; ++i) err += (am[i] - s * bm[i]) * (am[i] - s * bm[i]);
  return std::sqrt(err / aa);
}

// "rot": the case's trajectory with partition p turned in plane by p x 17 degrees (kz = p - P/2); returned.
CflArray write_rotated(const test::TempDir& dir) {
  CflArray t = read_cfl(dir / "traj");
  for (long i = 0; i < t.dim(1) * t.dim(2); ++i) {
    cfloat* k = t.data.data() + 3 * i;
    const double a = (k[2].real() + kP / 2) * 17.0 * std::numbers::pi / 180.0;
    const float x = k[0].real(), y = k[1].real();
    k[0] = cfloat(float(std::cos(a) * x - std::sin(a) * y), 0.f);
    k[1] = cfloat(float(std::sin(a) * x + std::cos(a) * y), 0.f);
  }
  write_cfl(dir / "rot", t.dims, t.data);
  return t;
}

void make_case(const test::TempDir& dir) {
  bart(dir, fmt::format("traj -r -G -x {} -o 2 -y {} t2", kN, kSpokes));  // +-N/2 in plane, 2x oversampled
  write_stack(dir, "traj", kP);
}

// BART's 3D phantom [N N P] (`truth`), its coil maps [N N P 4] (`sens`), and the k-space `ksp` of the coil
// images at trajectory `traj`, for the CG-SENSE comparisons with `bart pics`.
void make_sense_case(const test::TempDir& dir, const std::string& traj) {
  bart(dir, fmt::format("phantom -3 -x {} big", kN));
  bart(dir, fmt::format("resize -c 2 {} big truth", kP));
  bart(dir, fmt::format("phantom -3 -x {} -S 4 sbig", kN));
  bart(dir, fmt::format("resize -c 2 {} sbig sens", kP));
  bart(dir, "fmac truth sens cimg");
  bart(dir, fmt::format("nufft -d {}:{}:{} {} cimg ksp", kN, kN, kP, traj));
}

}  // namespace

// The volume's adjoint (gridding with no density compensation, 3 coils combined by root sum of squares)
// against `bart nufft -a -d N:N:P` on the same data, also with unsampled partitions (--partitions above the
// trajectory's depth).
TEST(StackOfStars, GriddingWithoutDcfIsBartsAdjoint) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_case(dir);
  bart(dir, fmt::format("phantom -3 -x {} -s 3 -k -t traj ksp", kN));
  for (const int P : {kP, kP + 4}) {
    bart(dir, fmt::format("nufft -a -d {}:{}:{} traj ksp ref", kN, kN, P));
    const std::string depth = P == kP ? std::string() : fmt::format(" --partitions {}", P);
    const auto r = recon(
        dir, fmt::format("--traj traj --kspace ksp --matrix {} --dcf none --out ours.cfl{}", kN, depth));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(
                  fmt::format("a stack of stars, {} partitions ({} sampled) x {} spokes", P, kP, kSpokes)),
              std::string::npos)
        << r.output;
    const CflArray v = read_cfl(dir / "ours");
    ASSERT_EQ(v.squeezed(), (std::vector<long>{kN, kN, P}));
    const double e = fitted_magnitude_nrmse(dir / "ref", dir / "ours");
    std::printf("stack of stars %dx%dx%d (%d sampled), 3 coils: adjoint NRMSE against BART %.2e\n", kN, kN, P,
                kP, e);
    EXPECT_LE(e, 1e-2);
  }
  // The same stack through the 3D NUFFT (--stack-3d, the comparison route a rotated stack takes): BART's
  // adjoint as well.
  const auto r =
      recon(dir, fmt::format("--traj traj --kspace ksp --matrix {} --dcf none --stack-3d --repeat 2 "
                             "--out ours3d.cfl",
                             kN));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("--stack-3d: gridding through the 3D NUFFT"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("over 2 run(s)"), std::string::npos) << r.output;
  bart(dir, fmt::format("nufft -a -d {}:{}:{} traj ksp ref", kN, kN, kP));
  const double e = fitted_magnitude_nrmse(dir / "ref", dir / "ours3d");
  std::printf("stack of stars through the 3D NUFFT: adjoint NRMSE against BART %.2e\n", e);
  EXPECT_LE(e, 1e-2);
}

// CG-SENSE with the true coil maps [N N P C] against `bart pics -l2` with the same maps and iterations, both
// measured against the truth: no worse than 1.05x BART's error. Own maps (estimated per partition) and NLINV
// per partition give the volume too.
TEST(StackOfStars, CgSenseWithTheTrueMapsIsNoWorseThanBartPics) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_case(dir);
  make_sense_case(dir, "traj");
  bart(dir, "pics -S -i 30 -l2 -r 0.001 -t traj ksp sens pics");
  auto r = recon(dir, fmt::format("--traj traj --kspace ksp --matrix {} --method cg-sense --sens sens.cfl "
                                  "--iterations 30 --lambda 0.001 --out cg.cfl",
                                  kN));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double ours = fitted_magnitude_nrmse(dir / "truth", dir / "cg");
  const double theirs = fitted_magnitude_nrmse(dir / "truth", dir / "pics");
  std::printf("stack of stars CG-SENSE against the truth: ours %.4f, bart pics %.4f (ratio %.3f)\n", ours,
              theirs, ours / theirs);
  EXPECT_LE(ours, 1.05 * theirs);

  for (const std::string method : {"cg-sense", "nlinv"}) {
    const std::string maps = method == "cg-sense" ? " --sens-out maps.cfl" : "";
    r = recon(dir, fmt::format("--traj traj --kspace ksp --matrix {} --method {} --out own.cfl{}", kN, method,
                               maps));
    ASSERT_EQ(r.exit_code, 0) << method << "\n" << r.output;
    ASSERT_EQ(read_cfl(dir / "own").squeezed(), (std::vector<long>{kN, kN, kP}));
    const double e = fitted_magnitude_nrmse(dir / "truth", dir / "own");
    std::printf("stack of stars, %s with its own maps: NRMSE against the truth %.4f\n", method.c_str(), e);
    EXPECT_LE(e, 0.5) << method;  // 21 spokes for a 32^2 plane: far from the truth's detail, but its image
  }
  EXPECT_EQ(read_cfl(dir / "maps").squeezed(), (std::vector<long>{kN, kN, kP, 4}));
}

// What is not a stack of stars is refused with the spoke and its kz named (exit 2), never read as 2D; a
// trajectory whose kz varies along its spokes is gridded through the 3D NUFFT (AKooshballGridsAsBartsAdjoint)
// and refused by the methods that need a stack.
TEST(StackOfStars, LayoutsThatAreNotAStackAreNamed) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_case(dir);
  bart(dir, fmt::format("phantom -3 -x {} -k -t traj ksp", kN));
  const std::string base = fmt::format("--kspace ksp --matrix {} --out o.cfl --traj ", kN);
  struct Case {
    std::string name, expect, method;
    std::function<float(int, int, int)> kz;
  };
  const std::vector<Case> cases = {
      {"off_grid", "is not on the partition grid", "gridding",
       [](int p, int, int) { return float(p - kP / 2) + 0.3f; }},
      {"varying", "kz varies along the spoke", "nlinv",
       [](int p, int, int s) { return float(p - kP / 2) + 0.01f * s; }},
  };
  for (const Case& c : cases) {
    write_stack(dir, c.name, kP, c.kz);
    const auto r = recon(dir, base + c.name + " --method " + c.method);
    EXPECT_EQ(r.exit_code, 2) << c.name << "\n" << r.output;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.name << "\n" << r.output;
  }
  {
    const auto r = recon(dir, base + "varying");  // gridding: the 3D NUFFT, no partition grid
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("a 3D radial (kooshball) trajectory"), std::string::npos) << r.output;
  }
  auto r = recon(dir, base + "traj --partitions 8");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("lies outside the 8 partitions"), std::string::npos) << r.output;
  r = recon(dir, fmt::format("--kspace ksp --matrix {} --out o.png --traj traj", kN));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("a volume is written as .cfl"), std::string::npos) << r.output;
  // Partitions rotated against each other: gridding takes them (RotatedPartitionsGridAsBartsAdjoint), the
  // methods that solve one 2D problem per z position refuse them, naming the spoke.
  CflArray t = read_cfl(dir / "traj");
  for (long j = kSpokes; j < 2 * kSpokes; ++j)  // the second partition in file order turned by 90 degrees
    for (long s = 0; s < kSamples; ++s) {
      cfloat* k = t.data.data() + 3 * (kSamples * j + s);
      const cfloat x = k[0];
      k[0] = -k[1];
      k[1] = x;
    }
  write_cfl(dir / "rotated", t.dims, t.data);
  for (const char* method : {"cg-sense", "nlinv"}) {
    r = recon(dir, base + "rotated --method " + method);
    EXPECT_EQ(r.exit_code, 2) << method << "\n" << r.output;
    EXPECT_NE(r.output.find("partitions rotated against each other are not supported"), std::string::npos)
        << method << "\n"
        << r.output;
    EXPECT_NE(r.output.find("is not spoke"), std::string::npos) << method << "\n" << r.output;
  }
  // Any other reader of a BART trajectory as one 2D frame refuses kz rather than drop it.
  r = test::run_command("cd " + dir.path().string() + " && " + test::radstream_binary() +
                        fmt::format(" convert --traj traj --kspace ksp --matrix {} --out c.h5", kN));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("has kz = "), std::string::npos) << r.output;
}

// Partitions turned against each other in plane (partition p's spokes by p x 17 degrees): gridding through
// the 3D NUFFT with no density compensation against `bart nufft -a -d N:N:P` on the same data (3 coils by
// root sum of squares), and with the ramp against BART's adjoint of the same ramp-weighted data.
TEST(StackOfStars, RotatedPartitionsGridAsBartsAdjoint) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_case(dir);
  const CflArray t = write_rotated(dir);
  const long n = t.dim(1) * t.dim(2);
  bart(dir, fmt::format("phantom -3 -x {} -s 3 -k -t rot ksp", kN));
  bart(dir, fmt::format("nufft -a -d {}:{}:{} rot ksp ref", kN, kN, kP));
  auto r = recon(dir, fmt::format("--traj rot --kspace ksp --matrix {} --dcf none --out ours.cfl", kN));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("partitions rotated against each other: gridding through the 3D NUFFT"),
            std::string::npos)
      << r.output;
  ASSERT_EQ(read_cfl(dir / "ours").squeezed(), (std::vector<long>{kN, kN, kP}));
  const double e = fitted_magnitude_nrmse(dir / "ref", dir / "ours");
  std::printf("rotated stack of stars %dx%dx%d, 3 coils: adjoint NRMSE against BART %.2e\n", kN, kN, kP, e);
  EXPECT_LE(e, 1e-2);
  // The ramp: each sample weighted by its in-plane radius (BART units), the same for every partition's own
  // spokes, is what --dcf ramp applies up to a scale; the centre sample's zero weight is the ramp's too. (The
  // unrotated stack's chain path is 1.06e-2 from BART's adjoint of the same weighted data: the ramp weighs
  // the outer k-space, where the kernels differ most.)
  const CflArray k = read_cfl(dir / "ksp");
  CflArray kw = k;
  for (std::size_t i = 0; i < kw.data.size(); ++i) {
    const std::size_t pt = i % std::size_t(n);
    kw.data[i] *= std::hypot(t.data[3 * pt].real(), t.data[3 * pt + 1].real());
  }
  write_cfl(dir / "kw", kw.dims, kw.data);
  bart(dir, fmt::format("nufft -a -d {}:{}:{} rot kw refw", kN, kN, kP));
  // (with BART's kernel width: the ramp weighs the outer k-space, where the default width 4's error shows)
  r = recon(
      dir, fmt::format("--traj rot --kspace ksp --matrix {} --dcf ramp --kernel-width 6 --out ramp.cfl", kN));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double er = fitted_magnitude_nrmse(dir / "refw", dir / "ramp");
  const double unweighted = fitted_magnitude_nrmse(dir / "ref", dir / "ramp");
  std::printf(
      "the same with the ramp: NRMSE against BART's adjoint of the ramp-weighted data %.2e (against the "
      "unweighted adjoint %.3f)\n",
      er, unweighted);
  EXPECT_LE(er, 2e-2);
  EXPECT_GT(unweighted, 0.1);
  // Read as if its partitions were not turned (BART's adjoint on the unrotated trajectory), the same samples
  // give another volume: the route matters.
  bart(dir, fmt::format("nufft -a -d {}:{}:{} traj ksp unrot", kN, kN, kP));
  const double wrong = fitted_magnitude_nrmse(dir / "unrot", dir / "ours");
  std::printf("against the unrotated reading: %.3f\n", wrong);
  EXPECT_GT(wrong, 0.05);
}

// CG-SENSE over partitions turned against each other (the 3D SENSE operator) with the true coil maps
// [N N P C], against `bart pics -l2` with the same maps and iterations, both measured against the truth: no
// worse than 1.05x BART's error.
TEST(StackOfStars, RotatedPartitionsCgSenseIsNoWorseThanBartPics) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  make_case(dir);
  write_rotated(dir);
  make_sense_case(dir, "rot");
  bart(dir, "pics -S -i 30 -l2 -r 0.001 -t rot ksp sens pics");
  const auto r =
      recon(dir, fmt::format("--traj rot --kspace ksp --matrix {} --method cg-sense --sens sens.cfl "
                             "--iterations 30 --lambda 0.001 --out cg.cfl",
                             kN));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cg-sense through the 3D SENSE operator (CPU): 30 iterations"), std::string::npos)
      << r.output;
  ASSERT_EQ(read_cfl(dir / "cg").squeezed(), (std::vector<long>{kN, kN, kP}));
  const double ours = fitted_magnitude_nrmse(dir / "truth", dir / "cg");
  const double theirs = fitted_magnitude_nrmse(dir / "truth", dir / "pics");
  std::printf("rotated stack of stars CG-SENSE against the truth: ours %.4f, bart pics %.4f (ratio %.3f)\n",
              ours, theirs, ours / theirs);
  EXPECT_LE(ours, 1.05 * theirs);
}

// A 3D radial (kooshball) trajectory (`bart traj -r -3`: kz varies along every spoke, no partition grid):
// recon grids it through the 3D NUFFT onto N^3. With --dcf none it is `bart nufft -a -d N:N:N` of the same
// data (3 coils by root sum of squares); with the ramp it is BART's adjoint of the data weighted by |k|^2
// (the 3D radial density falls as 1/|k|^2) and far from the unweighted adjoint; nlinv refuses it, naming the
// spoke.
TEST(StackOfStars, AKooshballGridsAsBartsAdjoint) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  bart(dir, fmt::format("traj -x {} -y 400 -r -3 koosh", kN));
  bart(dir, fmt::format("phantom -3 -x {} -s 3 -k -t koosh ksp", kN));
  bart(dir, fmt::format("nufft -a -d {}:{}:{} koosh ksp ref", kN, kN, kN));
  auto r = recon(dir, fmt::format("--traj koosh --kspace ksp --matrix {} --dcf none --out ours.cfl", kN));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a 3D radial (kooshball) trajectory"), std::string::npos) << r.output;
  ASSERT_EQ(read_cfl(dir / "ours").squeezed(), (std::vector<long>{kN, kN, kN}));
  const double e = fitted_magnitude_nrmse(dir / "ref", dir / "ours");
  std::printf("kooshball %d^3, 3 coils: adjoint NRMSE against BART %.2e\n", kN, e);
  EXPECT_LE(e, 1e-2);
  const CflArray t = read_cfl(dir / "koosh"), k = read_cfl(dir / "ksp");
  const std::size_t n = t.data.size() / 3;
  CflArray kw = k;
  for (std::size_t i = 0; i < kw.data.size(); ++i) {
    const std::size_t pt = i % n;
    kw.data[i] *= std::norm(t.data[3 * pt].real()) + std::norm(t.data[3 * pt + 1].real()) +
                  std::norm(t.data[3 * pt + 2].real());
  }
  write_cfl(dir / "kw", kw.dims, kw.data);
  bart(dir, fmt::format("nufft -a -d {}:{}:{} koosh kw refw", kN, kN, kN));
  r = recon(dir, fmt::format(
                     "--traj koosh --kspace ksp --matrix {} --dcf ramp --kernel-width 6 --out ramp.cfl", kN));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double er = fitted_magnitude_nrmse(dir / "refw", dir / "ramp");
  const double unweighted = fitted_magnitude_nrmse(dir / "ref", dir / "ramp");
  std::printf(
      "with |k|^2: NRMSE against BART's adjoint of the weighted data %.2e (against the unweighted %.3f)\n",
      er, unweighted);
  EXPECT_LE(er, 2e-2);
  EXPECT_GT(unweighted, 0.1);
  r = recon(dir, fmt::format("--traj koosh --kspace ksp --matrix {} --method nlinv --out nl.cfl", kN));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("kz varies along the spoke"), std::string::npos) << r.output;
}

// A kooshball's CG-SENSE with the true coil maps [N N N C] (--sens) through the 3D SENSE operator, against
// `bart pics -l2` with the same maps and iterations, both measured against the truth: no worse than 1.05x
// BART's error; without maps it is refused, naming --sens.
TEST(StackOfStars, AKooshballsCgSenseIsNoWorseThanBartPics) {
  RADSTREAM_REQUIRE_BART();
  test::TempDir dir;
  bart(dir, fmt::format("traj -x {} -y 300 -r -3 koosh", kN));
  bart(dir, fmt::format("phantom -3 -x {} truth", kN));
  bart(dir, fmt::format("phantom -3 -x {} -S 4 sens", kN));
  bart(dir, "fmac truth sens cimg");
  bart(dir, fmt::format("nufft -d {}:{}:{} koosh cimg ksp", kN, kN, kN));
  bart(dir, "pics -S -i 30 -l2 -r 0.001 -t koosh ksp sens pics");
  auto r = recon(dir, fmt::format("--traj koosh --kspace ksp --matrix {} --method cg-sense --sens sens.cfl "
                                  "--iterations 30 --lambda 0.001 --out cg.cfl",
                                  kN));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cg-sense through the 3D NUFFT"), std::string::npos) << r.output;
  ASSERT_EQ(read_cfl(dir / "cg").squeezed(), (std::vector<long>{kN, kN, kN}));
  const double ours = fitted_magnitude_nrmse(dir / "truth", dir / "cg");
  const double theirs = fitted_magnitude_nrmse(dir / "truth", dir / "pics");
  std::printf("kooshball CG-SENSE against the truth: ours %.4f, bart pics %.4f (ratio %.3f)\n", ours, theirs,
              ours / theirs);
  EXPECT_LE(ours, 1.05 * theirs);
  r = recon(dir, fmt::format("--traj koosh --kspace ksp --matrix {} --method cg-sense --out own.cfl", kN));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--sens"), std::string::npos) << r.output;
}
