// The NUFFT plan and operator on the CPU against the exact non-uniform DFT in double: forward (interp) and
// adjoint (spread) in 2D and 3D, the kernel-width accuracy bounds, adjointness, and hostile coordinates.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "linalg/adjoint_check.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "sim/nudft.hpp"

using namespace radstream;

namespace {

struct Problem {
  int dims;
  std::array<int, 3> matrix;
  std::size_t points;
  std::vector<float> traj;
  std::vector<cfloat> image, samples;
  std::size_t image_size() const { return std::size_t(matrix[0]) * matrix[1] * matrix[2]; }
};

Problem random_problem(int dims, int N, std::size_t points, unsigned seed) {
  Problem p{dims, {N, dims > 1 ? N : 1, dims > 2 ? N : 1}, points, {}, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> k(-0.5f, 0.5f);
  std::normal_distribution<float> d(0.f, 1.f);
  p.traj.resize(points * dims);
  for (auto& v : p.traj) v = k(rng);
  p.image.resize(p.image_size());
  for (auto& v : p.image) v = cfloat(d(rng), d(rng));
  p.samples.resize(points);
  for (auto& v : p.samples) v = cfloat(d(rng), d(rng));
  return p;
}

template <class A, class B>
double rel_err(const A& got, const B& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += std::norm(std::complex<double>(got[i]) - std::complex<double>(ref[i]));
    den += std::norm(std::complex<double>(ref[i]));
  }
  return std::sqrt(num / den);
}

double forward_error(const Problem& p, int width) {
  NufftOperatorCpu op(p.dims, p.matrix, 1, p.points, {width, 2.0, 4096});
  op.set_points(p.traj.data());
  std::vector<cfloat> y(p.points);
  op.forward(p.image.data(), y.data());
  return rel_err(y, forward_nudft(p.traj, p.dims, p.image, p.matrix));
}

}  // namespace

TEST(NufftPlan, Forward2dMatchesExactNudft) {
  const Problem p = random_problem(2, 32, 3000, 11);
  const double e6 = forward_error(p, 6), e4 = forward_error(p, 4);
  std::printf("interp vs exact forward NUDFT, 2D 32^2, 3000 points: W6 %.2e, W4 %.2e\n", e6, e4);
  EXPECT_LE(e6, 1e-4);
  EXPECT_LE(e4, 2e-3);
}

TEST(NufftPlan, Forward3dMatchesExactNudft) {
  const Problem p = random_problem(3, 12, 800, 12);
  const double e6 = forward_error(p, 6), e4 = forward_error(p, 4);
  std::printf("interp vs exact forward NUDFT, 3D 12^3, 800 points: W6 %.2e, W4 %.2e\n", e6, e4);
  EXPECT_LE(e6, 1e-4);
  EXPECT_LE(e4, 2e-3);
}

// Odd widths (the plans take any width 2..16; the reconstruction stages keep even ones): the footprint
// floor(u - W/2) + 1 .. + W covers every cell within W/2, so each width lands between its even neighbours.
TEST(NufftPlan, OddWidthsLandBetweenTheirEvenNeighbours) {
  for (int dims : {2, 3}) {
    const Problem p = dims == 2 ? random_problem(2, 32, 2000, 17) : random_problem(3, 12, 600, 18);
    double e[9] = {};
    for (int w = 3; w <= 8; ++w) e[w] = forward_error(p, w);
    std::printf("%dD forward vs exact, W3..W8: %.2e %.2e %.2e %.2e %.2e %.2e\n", dims, e[3], e[4], e[5], e[6],
                e[7], e[8]);
    for (int w = 4; w <= 8; ++w) EXPECT_LT(e[w], e[w - 1]) << dims << "D W" << w;
    EXPECT_LE(e[5], 1e-3) << dims << "D";
    EXPECT_LE(e[7], 1e-5) << dims << "D";
  }
}

TEST(NufftPlan, Adjoint2dMatchesExactNudft) {
  const Problem p = random_problem(2, 32, 3000, 13);
  for (int width : {4, 6}) {
    NufftOperatorCpu op(2, p.matrix, 1, p.points, {width, 2.0, 4096});
    op.set_points(p.traj.data());
    std::vector<cfloat> x(p.image_size());
    op.adjoint(p.samples.data(), x.data());
    const double e = rel_err(x, adjoint_nudft(p.traj, p.samples, {}, 32));
    std::printf("spread vs exact adjoint NUDFT, W%d: %.2e\n", width, e);
    EXPECT_LE(e, width == 6 ? 1e-4 : 2e-3);
  }
}

TEST(NufftPlan, Adjoint3dMatchesExactNudft) {
  const Problem p = random_problem(3, 12, 800, 14);
  std::vector<std::size_t> all(p.image_size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const auto ref = adjoint_nudft_at(p.traj, 3, p.samples, 1, p.matrix, all);
  for (int width : {4, 6}) {
    NufftOperatorCpu op(3, p.matrix, 1, p.points, {width, 2.0, 4096});
    op.set_points(p.traj.data());
    std::vector<cfloat> x(p.image_size());
    op.adjoint(p.samples.data(), x.data());
    const double e = rel_err(x, ref);
    std::printf("spread vs exact adjoint NUDFT, 3D 12^3, W%d: %.2e\n", width, e);
    EXPECT_LE(e, width == 6 ? 1e-4 : 2e-3);
  }
}

// The sampled sums the sweeps use are the full sums at the chosen outputs, for every batch item.
TEST(NufftPlan, SampledExactSumsEqualTheFullOnes) {
  const Problem p = random_problem(2, 16, 300, 15);
  const auto full_adj = adjoint_nudft(p.traj, p.samples, {}, 16);
  const std::vector<std::size_t> pixels{0, 17, 100, 255};
  const std::vector<cfloat> twice = [&] {
    std::vector<cfloat> v(p.samples);
    for (const auto& s : p.samples) v.push_back(2.f * s);
    return v;
  }();
  const auto adj = adjoint_nudft_at(p.traj, 2, twice, 2, p.matrix, pixels);
  for (std::size_t q = 0; q < pixels.size(); ++q) {
    EXPECT_LE(std::abs(adj[q] - full_adj[pixels[q]]), 1e-9 * std::abs(full_adj[pixels[q]]) + 1e-9);
    EXPECT_LE(std::abs(adj[pixels.size() + q] - 2.0 * full_adj[pixels[q]]),
              1e-9 * std::abs(full_adj[pixels[q]]) + 1e-9);
  }
  const Problem v = random_problem(3, 8, 50, 16);
  const auto full_fwd = forward_nudft(v.traj, 3, v.image, v.matrix);
  const std::vector<std::size_t> points{3, 0, 49};
  const auto fwd = forward_nudft_at(v.traj, 3, v.image, 1, v.matrix, points);
  for (std::size_t q = 0; q < points.size(); ++q)
    EXPECT_LE(std::abs(fwd[q] - full_fwd[points[q]]), 1e-9 * std::abs(full_fwd[points[q]]));
}

TEST(NufftPlan, OperatorIsAdjointIn2dAnd3dWithCoils) {
  for (int dims : {2, 3}) {
    const int N = dims == 2 ? 24 : 10;
    const Problem p = random_problem(dims, N, 500, 20 + dims);
    NufftOperatorCpu op(dims, p.matrix, 3, p.points, {4, 2.0, 1024});
    op.set_points(p.traj.data());
    const AdjointCheck c = check_adjoint(op, 3);
    std::printf("%dD NUFFT <Ax,y> = %.6g%+.6gi, <x,A^H y> = %.6g%+.6gi, rel %.2e\n", dims, c.lhs.real(),
                c.lhs.imag(), c.rhs.real(), c.rhs.imag(), c.relative_error);
    EXPECT_LE(c.relative_error, 1e-5);
  }
}

TEST(NufftPlan, SpreadAndInterpOfThePlanAreAdjoint) {
  const Problem p = random_problem(2, 16, 400, 31);
  NufftPlanCpu plan(2, {32, 32, 1}, {6, 2.0, 1024}, p.points);
  plan.set_points(p.traj.data(), p.points);
  std::mt19937 rng(2);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<cfloat> g(plan.grid_size()), gs(plan.grid_size()), ys(p.points);
  for (auto& v : g) v = cfloat(d(rng), d(rng));
  plan.interp(g.data(), ys.data(), 1);
  plan.spread(p.samples.data(), gs.data(), 1);
  std::complex<double> lhs = 0, rhs = 0;
  for (std::size_t j = 0; j < p.points; ++j)
    lhs += std::conj(std::complex<double>(ys[j])) * std::complex<double>(p.samples[j]);
  for (std::size_t i = 0; i < g.size(); ++i)
    rhs += std::conj(std::complex<double>(g[i])) * std::complex<double>(gs[i]);
  EXPECT_LE(std::abs(lhs - rhs) / std::abs(lhs), 1e-5);
}

// A finite but absurd coordinate (the fuzz found 2e7 .. 1e30 crash the old CPU gridding) and NaN add nothing
// and interpolate to 0; the other points are untouched.
TEST(NufftPlan, HostileCoordinatesContributeNothing) {
  Problem p = random_problem(2, 16, 64, 41);
  NufftOperatorCpu clean(2, p.matrix, 1, p.points, {4, 2.0, 1024});
  std::vector<float> bad = p.traj;
  const float hostile[] = {2e7f, -1e9f, 1e30f, std::nanf(""), INFINITY};
  for (int i = 0; i < 5; ++i) {
    bad[2 * i] = hostile[i];
    p.samples[i] = 0;  // the clean reference gets nothing from these points either
  }
  clean.set_points(p.traj.data());
  NufftOperatorCpu dirty(2, p.matrix, 1, p.points, {4, 2.0, 1024});
  dirty.set_points(bad.data());
  std::vector<cfloat> a(p.image_size()), b(p.image_size()), y(p.points);
  clean.adjoint(p.samples.data(), a.data());
  std::vector<cfloat> s = p.samples;
  for (int i = 0; i < 5; ++i) s[i] = cfloat(1e3f, 1e3f);  // large values on the hostile points
  dirty.adjoint(s.data(), b.data());
  EXPECT_LE(rel_err(b, a), 1e-6);
  dirty.forward(p.image.data(), y.data());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(y[i], cfloat(0.f, 0.f)) << "point " << i;
}
