// Seed 001's field model (eq. 44.1-44.2, Fig. 44.3) on the host: the forward sum against a plain double
// evaluation of the equation, the float twin against double, and the seed 001 case on its own data (the
// IMPATIENT 64 x 64 spiral with susceptibility gradients): CG in float against the double twin, and the image
// with the gradient model against the one without it inside the mask. The CLI on both.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "exact/exact_cpu.hpp"
#include "exact/exact_recon.hpp"
#include "exact/time_segmented.hpp"
#include "io/cfl.hpp"
#include "io/exact_inputs.hpp"
#include "linalg/adjoint_check.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "reference/exact_test_util.hpp"
#include "test_util.hpp"

using namespace radstream;
using namespace radstream::exacttest;

namespace {

using cd = std::complex<double>;

// Eq. 44.1 with eq. 44.2's rectangle basis integrated over a voxel of one pixel, written out as plainly as
// possible: d_m = sum_n rho_n exp(-i 2 pi (k_m . r_n + fm_n t_m)) prod_a sinc(k_{m,a} + t_m g_{n,a}).
std::vector<cd> equation_44(const ExactModel& m, const std::vector<cd>& rho) {
  const double pi = std::numbers::pi;
  auto sinc = [&](double u) { return u == 0 ? 1.0 : std::sin(pi * u) / (pi * u); };
  std::vector<cd> d(m.samples());
  const auto& g = m.grid;
  for (std::size_t i = 0; i < m.samples(); ++i) {
    cd s = 0;
    std::size_t n = 0;
    for (int a = 0; a < g.n[0]; ++a)
      for (int b = 0; b < g.n[1]; ++b)
        for (int c = 0; c < g.n[2]; ++c, ++n) {
          const double r[3] = {g.origin[0] + a, g.origin[1] + b, g.origin[2] + c};
          double phase = m.fm[n] * double(m.t[i]), w = 1;
          for (int ax = 0; ax < 3; ++ax) {
            phase += double(m.k[ax][i]) * r[ax];
            w *= sinc(double(m.k[ax][i]) + double(m.t[i]) * m.g[ax][n]);
          }
          s += rho[n] * w * std::exp(cd(0, -2 * pi * phase));
        }
    d[i] = s;
  }
  return d;
}

}  // namespace

TEST(ExactField, ForwardIsEquation44) {
  ExactModel m = random_model(ExactGrid::image(12, 2), 300, 5);
  add_field(m, 6, true);
  m = m.filled();
  const auto rho = random_vector<double>(m.voxels(), 3);
  const auto ref = equation_44(m, rho);
  std::vector<cd> got(m.samples());
  exact_forward_cpu<double>(m, rho.data(), got.data());
  EXPECT_LE(rel_err(got, ref), 1e-12);
  std::vector<cfloat> rf(rho.begin(), rho.end()), gf(m.samples());
  exact_forward_cpu<float>(m, rf.data(), gf.data());
  EXPECT_LE(rel_err(gf, ref), 1e-5);
  // The adjoint in float against double.
  const auto d = random_vector<float>(m.samples(), 4);
  std::vector<cfloat> xf(m.voxels());
  std::vector<cd> xd(m.voxels());
  exact_adjoint_cpu<float>(m, d.data(), xf.data());
  exact_adjoint_cpu<double>(m, to_double(d).data(), xd.data());
  EXPECT_LE(rel_err(xf, xd), 1e-5);
}

TEST(ExactField, Seed001CaseOnItsOwnData) {
  RADSTREAM_REQUIRE_IMPATIENT_DATA("64x64x1");
  const ExactInputs in = load_impatient((test::impatient_data_dir() / "64x64x1").string());
  const ExactModel& m = in.model;
  ASSERT_EQ(m.samples(), 3770u);
  ASSERT_EQ(m.grid.n[1], 64);
  ASSERT_EQ(m.grid.n[2], 64);
  ASSERT_TRUE(m.has_gradients());
  ASSERT_EQ(in.mask.size(), m.voxels());
  ExactReconOptions o;
  o.method = ExactMethod::Cg;
  o.iterations = 8;
  o.lambda = 1e-2;
  const auto with = exact_reconstruct(m, in.kdata, 1, o);
  const auto ref = exact_cg_reference(m, in.kdata.data(), 8, 1e-2);
  const double nrmse = rel_err(with.image, ref);
  // Without the gradients' sinc terms the image inside the mask differs.
  ExactModel plain = m;
  plain.g = {};
  plain.t.clear();
  const auto without = exact_reconstruct(plain, in.kdata, 1, o);
  double num = 0, den = 0;
  for (std::size_t v = 0; v < m.voxels(); ++v)
    if (in.mask[v] > 0) {
      num += std::norm(with.image[v] - without.image[v]);
      den += std::norm(with.image[v]);
    }
  const double diff = std::sqrt(num / den);
  EXPECT_GE(diff, 0.05) << "the gradient model changed the image inside the mask by only " << diff;
  std::cout << "seed 001 case: float CPU vs double twin NRMSE " << nrmse << ", with vs without gradients "
            << diff << " inside the mask\n";
}

TEST(ExactField, CliFhdAndCgExactOnCflInputs) {
  test::TempDir dir;
  const auto p = [&](const char* n) { return (dir.path() / n).string(); };
  // A 16 x 16 problem: 20 radial spokes of 32 samples in BART units, data of a small square.
  const int N = 16, S = 32, P = 20;
  std::vector<cfloat> traj(std::size_t(3) * S * P), ksp(std::size_t(S) * P);
  ExactModel m;
  m.grid = ExactGrid::image(N, 2);
  m.k[1].resize(S * P);
  m.k[2].resize(S * P);
  for (int s = 0; s < P; ++s)
    for (int i = 0; i < S; ++i) {
      const double a = std::numbers::pi * s / P, r = (i - S / 2) * 0.5;
      const std::size_t j = std::size_t(s) * S + i;
      traj[3 * j] = float(r * std::cos(a));
      traj[3 * j + 1] = float(r * std::sin(a));
      m.k[2][j] = traj[3 * j].real() / N;
      m.k[1][j] = traj[3 * j + 1].real() / N;
    }
  std::vector<cd> obj(N * N), d(S * P);
  for (int y = 6; y < 10; ++y)
    for (int x = 5; x < 11; ++x) obj[y * N + x] = 1.0;
  exact_forward_cpu<double>(m.filled(), obj.data(), d.data());
  for (std::size_t j = 0; j < d.size(); ++j) ksp[j] = cfloat(d[j]);
  write_cfl(p("t"), {3, S, P}, traj);
  write_cfl(p("k"), {1, S, P}, ksp);
  const std::string bin = RADSTREAM_BIN;
  auto r =
      test::run_command(bin + " recon --method fhd --backend cpu --traj " + p("t") + " --kspace " + p("k") +
                        " --matrix 16 --out " + p("fhd.cfl") + " --report " + p("fhd.json") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const CflArray fhd = read_cfl(p("fhd"));
  ASSERT_EQ(fhd.squeezed(), (std::vector<long>{16, 16}));
  std::vector<cd> ref(N * N);
  exact_adjoint_cpu<double>(m.filled(), d.data(), ref.data());
  EXPECT_LE(rel_err(fhd.data, ref), 2e-5);
  r = test::run_command(bin + " recon --method cg-exact --backend cpu --iterations 6 --lambda 0.5 --traj " +
                        p("t") + " --kspace " + p("k") + " --matrix 16 --out " + p("cg.cfl") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cg_ref = exact_cg_reference(m, ksp.data(), 6, 0.5);
  EXPECT_LE(rel_err(read_cfl(p("cg")).data, cg_ref), 1e-4);
  // A stack of slices (k-space dim 4) gives one [N N slices] image, slice by slice the same as alone.
  std::vector<cfloat> stack(ksp);
  for (const auto& v : ksp) stack.push_back(2.0f * v);
  write_cfl(p("k3"), {1, S, P, 1, 2}, stack);
  r = test::run_command(bin + " recon --method fhd --backend cpu --traj " + p("t") + " --kspace " + p("k3") +
                        " --matrix 16 --out " + p("stack.cfl") + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const CflArray st = read_cfl(p("stack"));
  ASSERT_EQ(st.squeezed(), (std::vector<long>{16, 16, 2}));
  const std::vector<cfloat> first(st.data.begin(), st.data.begin() + 256),
      second(st.data.begin() + 256, st.data.end());
  EXPECT_LE(rel_err(first, ref), 2e-5);
  std::vector<cd> ref2(ref);
  for (auto& v : ref2) v *= 2.0;
  EXPECT_LE(rel_err(second, ref2), 2e-5);
  // Mistakes are named.
  r = test::run_command(bin + " recon --method fhd --backend cpu --fast-math --traj " + p("t") +
                        " --kspace " + p("k") + " --matrix 16 --out " + p("x.cfl") + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--fast-math"), std::string::npos) << r.output;
  r = test::run_command(bin + " recon --method gridding --impatient " + p("") + " --out " + p("x.cfl") +
                        " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--impatient goes with --method fhd or cg-exact"), std::string::npos) << r.output;
  r = test::run_command(bin + " recon --method cg-exact --dcf ramp --traj " + p("t") + " --kspace " + p("k") +
                        " --matrix 16 --out " + p("x.cfl") + " 2>&1");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("does not apply to --method cg-exact"), std::string::npos) << r.output;
}

TEST(ExactField, CliCgExactOnTheSeed001Case) {
  RADSTREAM_REQUIRE_IMPATIENT_DATA("64x64x1");
  test::TempDir dir;
  const std::string out = (dir.path() / "seed001.png").string();
  const auto r =
      test::run_command(std::string(RADSTREAM_BIN) + " recon --method cg-exact --backend cpu --impatient " +
                        (test::impatient_data_dir() / "64x64x1").string() + " --out " + out + " 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3770 samples x 1 coil(s), 1 x 64 x 64 voxels, field map no, gradients yes"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("F and F^H from the stored matrix (118 MiB"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out));
  // --matrix-limit-mb: 0 recomputes every term (no stored-matrix line); a negative value names itself.
  const std::string base = std::string(RADSTREAM_BIN) +
                           " recon --method cg-exact --backend cpu --iterations 1 --impatient " +
                           (test::impatient_data_dir() / "64x64x1").string() + " --out " + out;
  const auto fly = test::run_command(base + " --matrix-limit-mb 0 2>&1");
  ASSERT_EQ(fly.exit_code, 0) << fly.output;
  EXPECT_EQ(fly.output.find("stored matrix"), std::string::npos) << fly.output;
  const auto bad = test::run_command(base + " --matrix-limit-mb -5 2>&1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--matrix-limit-mb -5 must be >= 0"), std::string::npos) << bad.output;
  // --regions: one region everywhere is plain C (the same image bits); a label that is not a whole number, or
  // a file of the wrong size, is named.
  const std::string plain_cfl = (dir.path() / "plain.cfl").string(),
                    one_cfl = (dir.path() / "one.cfl").string();
  ASSERT_EQ(
      test::run_command(base.substr(0, base.find(" --out ")) + " --out " + plain_cfl + " 2>&1").exit_code, 0);
  std::vector<cfloat> labels(64 * 64, cfloat(3.0f, 0.0f));
  write_cfl((dir.path() / "regions").string(), {64, 64}, labels);
  const auto one = test::run_command(base.substr(0, base.find(" --out ")) + " --out " + one_cfl +
                                     " --regions " + (dir.path() / "regions.cfl").string() + " 2>&1");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(read_cfl(one_cfl).data, read_cfl(plain_cfl).data);
  labels[100] = cfloat(0.5f, 0.0f);
  write_cfl((dir.path() / "half").string(), {64, 64}, labels);
  const auto half = test::run_command(base + " --regions " + (dir.path() / "half.cfl").string() + " 2>&1");
  EXPECT_NE(half.exit_code, 0);
  EXPECT_NE(half.output.find("label 0.5 of voxel 100 is not a whole number"), std::string::npos)
      << half.output;
  write_cfl((dir.path() / "small").string(), {8, 8}, std::vector<cfloat>(64));
  const auto small = test::run_command(base + " --regions " + (dir.path() / "small.cfl").string() + " 2>&1");
  EXPECT_NE(small.exit_code, 0);
  EXPECT_NE(small.output.find("64 labels, the image has 4096 voxels"), std::string::npos) << small.output;
}

// The time-segmented approximation of the off-resonance term (on the exact F and on the NUFFT) against the
// exact field operator in double: finite for 1-16 segments, the error falling as segments grow.
TEST(ExactField, TimeSegmentationConvergesToTheExactFieldOperator) {
  ExactModel m = random_model(ExactGrid::image(24, 2), 1500, 41);
  add_field(m, 42, false);
  const auto x = random_vector<float>(m.voxels(), 43);
  std::vector<cd> ref(m.samples());
  exact_forward_cpu<double>(m.filled(), to_double(x).data(), ref.data());
  ExactModel plain = m;
  plain.fm.clear();
  plain.t.clear();
  auto exact_f = std::make_shared<ExactOperatorCpu>(plain);
  std::vector<float> traj(2 * m.samples());
  for (std::size_t i = 0; i < m.samples(); ++i) {
    traj[2 * i] = m.k[2][i];
    traj[2 * i + 1] = m.k[1][i];
  }
  auto nufft = std::make_shared<NufftOperatorCpu>(2, std::array<int, 3>{24, 24, 1}, 1, m.samples(),
                                                  NufftKernel{6, 2.0, 4096});
  nufft->set_points(traj.data());
  for (const auto& [name, f] :
       {std::pair<const char*, std::shared_ptr<LinearOperator>>{"exact F", exact_f}, {"NUFFT", nufft}}) {
    double previous = 1e9;
    for (int L : {1, 2, 4, 8, 16}) {
      TimeSegmentedCpu g(f, m.fm, m.t, L);
      std::vector<cfloat> y(m.samples());
      g.forward(x.data(), y.data());
      for (const auto& v : y)
        ASSERT_TRUE(std::isfinite(v.real()) && std::isfinite(v.imag())) << name << " L " << L;
      const double err = rel_err(y, ref);
      std::cout << name << ", " << L << " segments: relative error " << err << "\n";
      if (L > 1) {
        EXPECT_LT(err, previous) << name << " L " << L;
      }
      previous = err;
      if (L == 16) {
        EXPECT_LE(err, 2e-2) << name;
      }
      EXPECT_LE(check_adjoint(g).relative_error, 1e-5) << name << " L " << L;
    }
  }
  EXPECT_THROW(TimeSegmentedCpu(exact_f, m.fm, m.t, 0), ConfigError);
  EXPECT_THROW(TimeSegmentedCpu(exact_f, std::vector<float>(3), m.t, 4), InputError);
}
