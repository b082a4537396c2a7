// A SENSE operator of several images sharing one trajectory (the z positions of a stack of stars solved as
// one) against one operator per image, its adjoint test, and the volume CG-SENSE against each partition's
// own solve.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "iter/conjugate_gradient.hpp"
#include "linalg/adjoint_check.hpp"
#include "noncart/sense_operator_cpu.hpp"
#include "recon/volume_sense.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

const NufftKernel kAccurate{6, 2.0, 4096};

// Maps [P][C][N][N]: each partition's own (the coils' smooth maps in another order, with a phase of its own),
// so that a block mixed up with another would show.
std::vector<cfloat> volume_maps(int N, int coils, int P) {
  const auto base = test::smooth_coil_maps(N, coils);
  const std::size_t pixels = std::size_t(N) * N;
  std::vector<cfloat> maps(std::size_t(P) * coils * pixels);
  for (int z = 0; z < P; ++z)
    for (int c = 0; c < coils; ++c) {
      const cfloat turn = std::polar(1.f, 0.7f * float(z * coils + c));
      const cfloat* src = base.data() + std::size_t((c + z) % coils) * pixels;
      cfloat* dst = maps.data() + (std::size_t(z) * coils + c) * pixels;
      for (std::size_t p = 0; p < pixels; ++p) dst[p] = src[p] * turn;
    }
  return maps;
}

}  // namespace

TEST(VolumeSense, AnOperatorOfSeveralImagesIsOneOperatorPerImage) {
  const int N = 24, coils = 3, P = 4;
  const auto traj = test::golden_trajectory(20, 48);
  const std::size_t n = traj.size() / 2, pixels = std::size_t(N) * N;
  const auto maps = volume_maps(N, coils, P);
  std::vector<float> w(n);
  for (std::size_t j = 0; j < n; ++j) w[j] = std::hypot(traj[2 * j], traj[2 * j + 1]) + 0.01f;
  const auto x = test::random_complex(P * pixels, 3), y = test::random_complex(P * coils * n, 4);
  for (bool weighted : {false, true}) {
    SenseOperatorCpu vol(N, coils, n, kAccurate, true, 0, FftPlanner::Estimate, P);
    vol.set_maps(maps.data());
    vol.set_points(traj.data(), weighted ? w.data() : nullptr);
    const AdjointCheck a = check_adjoint(vol, 5);
    std::vector<cfloat> fx(P * coils * n), ay(P * pixels), nx(P * pixels), dx(P * pixels);
    vol.forward(x.data(), fx.data());
    vol.adjoint(y.data(), ay.data());
    vol.normal(x.data(), nx.data());
    vol.normal_direct(x.data(), dx.data());
    std::vector<cfloat> fx1(fx.size()), ay1(ay.size()), nx1(nx.size());
    for (int z = 0; z < P; ++z) {
      SenseOperatorCpu one(N, coils, n, kAccurate, true);
      one.set_maps(maps.data() + std::size_t(z) * coils * pixels);
      one.set_points(traj.data(), weighted ? w.data() : nullptr);
      one.forward(x.data() + z * pixels, fx1.data() + std::size_t(z) * coils * n);
      one.adjoint(y.data() + std::size_t(z) * coils * n, ay1.data() + z * pixels);
      one.normal(x.data() + z * pixels, nx1.data() + z * pixels);
    }
    const double ef = test::rel_error(fx, fx1), ea = test::rel_error(ay, ay1), en = test::rel_error(nx, nx1),
                 et = test::rel_error(nx, dx);
    std::printf(
        "sense of %d images (weighted %d): adjoint test %.3g; vs one operator per image: forward %.3g "
        "adjoint "
        "%.3g toeplitz normal %.3g; toeplitz vs forward-adjoint %.3g\n",
        P, int(weighted), a.relative_error, ef, ea, en, et);
    EXPECT_LT(a.relative_error, 1e-5);
    EXPECT_LT(ef, 1e-6);
    EXPECT_LT(ea, 1e-6);
    EXPECT_LT(en, 1e-6);
    EXPECT_LT(et, 1e-4);
    EXPECT_EQ(vol.domain(), (Extents{std::size_t(P), std::size_t(N), std::size_t(N)}));
  }
  EXPECT_THROW(SenseOperatorCpu(N, coils, n, kAccurate, true, 0, FftPlanner::Estimate, 0), ConfigError);
}

// The volume's one CG over [P][N][N] converges to every partition's own CG-SENSE solution (the system is
// block diagonal), with the relative Tikhonov weight scaled by the volume's map peak as each partition's is.
TEST(VolumeSense, TheVolumesSolveConvergesToEachPartitionsOwnSolve) {
  const int N = 24, coils = 3, P = 4;
  const auto traj = test::golden_trajectory(30, 48);
  const std::size_t n = traj.size() / 2, pixels = std::size_t(N) * N;
  const auto maps = volume_maps(N, coils, P);
  const auto data = test::random_complex(P * coils * n, 8);
  CgSenseParams p;
  p.iterations = 400;
  p.lambda = 1e-2;
  const VolumeSenseShape shape{N, P, coils, n};
  auto vol = make_volume_sense_cpu(shape, p, kAccurate, 0);
  vol->set_maps(maps.data(), 1.0);
  std::vector<cfloat> x(P * pixels);
  vol->solve(data.data(), traj.data(), x.data(), false);
  const double res = vol->residual();
  std::vector<cfloat> ref(P * pixels);
  auto ops = make_vector_ops_cpu();
  ConjugateGradient cg(pixels, *ops, false);
  for (int z = 0; z < P; ++z) {
    SenseOperatorCpu one(N, coils, n, kAccurate, true);
    one.set_maps(maps.data() + std::size_t(z) * coils * pixels);
    one.set_points(traj.data());
    std::vector<cfloat> b(pixels);
    one.adjoint(data.data() + std::size_t(z) * coils * n, b.data());
    CgOptions o;
    o.max_iterations = 400;
    o.tolerance = 1e-7;
    o.lambda = p.lambda * one.weight_sum() * 1.0;
    cg.solve(one, b.data(), ref.data() + z * pixels, o, false);
  }
  const double err = test::rel_error(x, ref);
  std::printf("volume cg-sense (%d partitions, %d iterations): residual %.2g, vs each partition's own %.3g\n",
              P, p.iterations, res, err);
  EXPECT_LT(res, 1e-5);
  EXPECT_LT(err, 1e-4);
  CgSenseParams smooth = p;
  smooth.smoothness = 0.1;
  EXPECT_THROW(make_volume_sense_cpu(shape, smooth, kAccurate, 0), ConfigError);
}
