// The SENSE operator on the CPU: the adjoint test (weighted and not), the Toeplitz normal against
// forward-then- adjoint and against the exact E^H W E in double, and CG-SENSE on a tiny problem against the
// dense least-squares solution in double.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>

#include "core/trajectory.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/adjoint_check.hpp"
#include "linalg/finite_difference.hpp"
#include "noncart/sense_operator_cpu.hpp"
#include "test_util.hpp"

using namespace radstream;
using cd = std::complex<double>;

namespace {

const NufftKernel kAccurate{6, 2.0, 4096};

std::vector<float> golden_traj(int spokes, int samples) {
  return test::golden_trajectory(spokes, samples);
}

std::vector<cfloat> smooth_maps(int N, int coils) {
  return test::smooth_coil_maps(N, coils);
}

std::vector<cfloat> random_vec(std::size_t n, unsigned seed) {
  return test::random_complex(n, seed);
}

std::vector<float> ramp_weights(const std::vector<float>& traj) {
  std::vector<float> w(traj.size() / 2);
  for (std::size_t j = 0; j < w.size(); ++j) w[j] = std::hypot(traj[2 * j], traj[2 * j + 1]) + 0.01f;
  return w;
}

// The dense E [coils * points][N * N] in double: S_c(p) exp(-2 pi i k_j . p), p = index - N/2, times
// sqrt(w_j).
std::vector<cd> dense_sense(int N, int coils, const std::vector<float>& traj, const std::vector<cfloat>& maps,
                            const std::vector<float>& w) {
  const std::size_t n = traj.size() / 2, P = std::size_t(N) * N;
  std::vector<cd> e(coils * n * P);
  for (int c = 0; c < coils; ++c)
    for (std::size_t j = 0; j < n; ++j)
      for (int y = 0; y < N; ++y)
        for (int x = 0; x < N; ++x) {
          const double ph =
              -2 * M_PI * (double(traj[2 * j]) * (x - N / 2) + double(traj[2 * j + 1]) * (y - N / 2));
          const std::size_t p = std::size_t(y) * N + x;
          e[(c * n + j) * P + p] =
              cd(maps[c * P + p]) * std::polar(1.0, ph) * (w.empty() ? 1.0 : std::sqrt(double(w[j])));
        }
  return e;
}

std::vector<cd> dense_normal_apply(const std::vector<cd>& e, std::size_t rows, std::size_t cols,
                                   const std::vector<cfloat>& x) {
  std::vector<cd> ex(rows), out(cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) ex[r] += e[r * cols + c] * cd(x[c]);
  for (std::size_t c = 0; c < cols; ++c)
    for (std::size_t r = 0; r < rows; ++r) out[c] += std::conj(e[r * cols + c]) * ex[r];
  return out;
}

double rel_error_d(const std::vector<cfloat>& a, const std::vector<cd>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(cd(a[i]) - b[i]);
    den += std::norm(b[i]);
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST(Sense, AdjointTestCpuWithAndWithoutWeights) {
  const int N = 32, coils = 4, spokes = 24, samples = 64;
  const auto traj = golden_traj(spokes, samples);
  const auto maps = smooth_maps(N, coils);
  const auto w = ramp_weights(traj);
  for (bool weighted : {false, true}) {
    SenseOperatorCpu op(N, coils, traj.size() / 2, kAccurate, false);
    op.set_maps(maps.data());
    op.set_points(traj.data(), weighted ? w.data() : nullptr);
    const AdjointCheck r = check_adjoint(op, 7);
    std::printf("sense adjoint (weighted %d): %.3g\n", int(weighted), r.relative_error);
    EXPECT_LT(r.relative_error, 1e-5);
  }
}

TEST(Sense, ToeplitzNormalEqualsForwardThenAdjointAndTheExactNormal) {
  const int N = 24, coils = 3, spokes = 20, samples = 48;
  const auto traj = golden_traj(spokes, samples);
  const auto maps = smooth_maps(N, coils);
  const auto w = ramp_weights(traj);
  const auto x = random_vec(std::size_t(N) * N, 3);
  for (bool weighted : {false, true}) {
    SenseOperatorCpu toep(N, coils, traj.size() / 2, kAccurate, true);
    toep.set_maps(maps.data());
    toep.set_points(traj.data(), weighted ? w.data() : nullptr);
    std::vector<cfloat> z_t(x.size()), z_d(x.size());
    toep.normal(x.data(), z_t.data());
    toep.normal_direct(x.data(), z_d.data());
    const auto e = dense_sense(N, coils, traj, maps, weighted ? w : std::vector<float>{});
    const auto z_exact = dense_normal_apply(e, coils * traj.size() / 2, x.size(), x);
    const double vs_direct = test::rel_error(z_t, z_d), vs_exact = rel_error_d(z_t, z_exact);
    std::printf("toeplitz (weighted %d): vs forward-adjoint %.3g, vs exact E^H W E %.3g\n", int(weighted),
                vs_direct, vs_exact);
    EXPECT_LT(vs_direct, 1e-4);
    EXPECT_LT(vs_exact, 1e-4);
  }
}

TEST(Sense, CgSenseOnATinyProblemMatchesTheDenseLeastSquaresSolution) {
  const int N = 16, coils = 3, spokes = 40, samples = 32;
  const auto traj = golden_traj(spokes, samples);
  const auto maps = smooth_maps(N, coils);
  const std::size_t n = traj.size() / 2, P = std::size_t(N) * N;
  const auto y = random_vec(coils * n, 11);
  const auto e = dense_sense(N, coils, traj, maps, {});
  // Dense normal matrix and right-hand side in double.
  std::vector<cd> ehe(P * P), ehy(P);
  for (std::size_t r = 0; r < coils * n; ++r)
    for (std::size_t i = 0; i < P; ++i) {
      const cd ci = std::conj(e[r * P + i]);
      ehy[i] += ci * cd(y[r]);
      for (std::size_t j = 0; j < P; ++j) ehe[i * P + j] += ci * e[r * P + j];
    }
  const double lambda = 1e-2 * double(n);  // relative 1e-2 of the diagonal where sum |S|^2 = 1
  const auto x_ref = test::dense_solve(ehe, P, lambda, ehy);
  for (bool toeplitz : {false, true}) {
    SenseOperatorCpu op(N, coils, n, kAccurate, toeplitz);
    op.set_maps(maps.data());
    op.set_points(traj.data());
    std::vector<cfloat> b(P), x(P);
    op.adjoint(y.data(), b.data());
    auto ops = make_vector_ops_cpu();
    ConjugateGradient cg(P, *ops);
    CgOptions o;
    o.max_iterations = 300;
    o.tolerance = 1e-7;
    o.lambda = lambda;
    const CgReport rep = cg.solve(op, b.data(), x.data(), o, false);
    const double err = rel_error_d(x, x_ref);
    std::printf("cg-sense 16^2 x 3 coils (toeplitz %d): %d iterations, residual %.2g, vs dense LS %.3g\n",
                int(toeplitz), rep.iterations, rep.residual, err);
    EXPECT_LT(err, 1e-4);
  }
}

TEST(Sense, FiniteDifferencesPassTheAdjointTestAndTheirNormalIsTheLaplacian) {
  const int N = 12;
  FiniteDifferenceCpu d(N);
  const AdjointCheck r = check_adjoint(d, 3);
  EXPECT_LT(r.relative_error, 1e-6);
  // D^H D at a delta: 4 at the centre, -1 at the four periodic neighbours (one of them across the edge).
  std::vector<cfloat> x(N * N, 0.f), z(N * N);
  x[0] = 1.f;
  d.normal(x.data(), z.data());
  EXPECT_NEAR(z[0].real(), 4.0, 1e-6);
  for (int i : {1, N - 1, N, (N - 1) * N}) EXPECT_NEAR(z[i].real(), -1.0, 1e-6);
  double rest = 0;
  for (int i = 0; i < N * N; ++i) rest += std::abs(z[i]);
  EXPECT_NEAR(rest, 8.0, 1e-5);
}
