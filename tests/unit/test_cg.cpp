// Conjugate gradients against dense solves in double: explicit SPD systems, a tiny NUDFT normal equation
// with Tikhonov, the NUFFT operator's normal equation; warm start; the iteration count; no allocation per
// solve once constructed; the composition and the adjoint helper on explicit matrices.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <new>
#include <random>

#include <omp.h>

#include "core/error.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/adjoint_check.hpp"
#include "linalg/vector_ops.hpp"
#include "noncart/nufft_operator_cpu.hpp"

using namespace radstream;
using cd = std::complex<double>;

namespace {

std::atomic<long> g_news{0};  // operator new calls in this test binary (test instrumentation only)

// A dense matrix [rows][cols] as an operator (host).
class MatrixOperator final : public LinearOperator {
 public:
  MatrixOperator(std::vector<cd> m, std::size_t rows, std::size_t cols)
      : LinearOperator(Extents{cols}, Extents{rows}, Location::Host),
        m_(std::move(m)),
        rows_(rows),
        cols_(cols) {}
  void forward(const cfloat* x, cfloat* y) override {
    for (std::size_t r = 0; r < rows_; ++r) {
      cd s = 0;
      for (std::size_t c = 0; c < cols_; ++c) s += m_[r * cols_ + c] * cd(x[c]);
      y[r] = cfloat(s);
    }
  }
  void adjoint(const cfloat* y, cfloat* x) override {
    for (std::size_t c = 0; c < cols_; ++c) {
      cd s = 0;
      for (std::size_t r = 0; r < rows_; ++r) s += std::conj(m_[r * cols_ + c]) * cd(y[r]);
      x[c] = cfloat(s);
    }
  }
  const std::vector<cd>& m() const { return m_; }

 private:
  std::vector<cd> m_;
  std::size_t rows_, cols_;
};

// Solves (A^H A + lambda I) x = b densely in double (Gaussian elimination with partial pivoting).
std::vector<cd> dense_normal_solve(const std::vector<cd>& a, std::size_t rows, std::size_t cols,
                                   double lambda, const std::vector<cd>& b) {
  const std::size_t n = cols;
  std::vector<cd> m(n * (n + 1));
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      cd s = i == j ? lambda : 0.0;
      for (std::size_t r = 0; r < rows; ++r) s += std::conj(a[r * cols + i]) * a[r * cols + j];
      m[i * (n + 1) + j] = s;
    }
    m[i * (n + 1) + n] = b[i];
  }
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t piv = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::abs(m[r * (n + 1) + c]) > std::abs(m[piv * (n + 1) + c])) piv = r;
    for (std::size_t k = 0; k <= n; ++k) std::swap(m[c * (n + 1) + k], m[piv * (n + 1) + k]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const cd f = m[r * (n + 1) + c] / m[c * (n + 1) + c];
      for (std::size_t k = c; k <= n; ++k) m[r * (n + 1) + k] -= f * m[c * (n + 1) + k];
    }
  }
  std::vector<cd> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = m[i * (n + 1) + n] / m[i * (n + 1) + i];
  return x;
}

double rel_err(const cfloat* got, const std::vector<cd>& ref) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    num += std::norm(cd(got[i]) - ref[i]);
    den += std::norm(ref[i]);
  }
  return std::sqrt(num / den);
}

std::vector<cd> random_matrix(std::size_t rows, std::size_t cols, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, 1.0);
  std::vector<cd> m(rows * cols);
  for (auto& v : m) v = cd(d(rng), d(rng));
  return m;
}

// The exact NUDFT matrix of random 2D points for an N x N image.
std::vector<cd> nudft_matrix(int N, std::size_t points, std::vector<float>* traj, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> k(-0.5f, 0.5f);
  traj->resize(2 * points);
  for (auto& v : *traj) v = k(rng);
  std::vector<cd> m(points * N * N);
  for (std::size_t j = 0; j < points; ++j)
    for (int y = 0; y < N; ++y)
      for (int x = 0; x < N; ++x) {
        const double ph = -2 * M_PI * ((*traj)[2 * j] * (x - N / 2) + (*traj)[2 * j + 1] * (y - N / 2));
        m[j * N * N + y * N + x] = cd(std::cos(ph), std::sin(ph));
      }
  return m;
}

struct Rhs {
  std::vector<cfloat> f;
  std::vector<cd> d;
};

Rhs random_rhs(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  Rhs r;
  for (std::size_t i = 0; i < n; ++i) {
    r.f.emplace_back(d(rng), d(rng));
    r.d.emplace_back(r.f.back());
  }
  return r;
}

}  // namespace

void* operator new(std::size_t n) {
  ++g_news;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
// Not inlined: inlined into a caller, GCC 12 pairs this free() with the caller's operator new and warns of a
// mismatch (-Wmismatched-new-delete), although this operator new takes its memory from malloc.
[[gnu::noinline]] void operator delete(void* p) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}

TEST(Cg, ExplicitSpdSystemMatchesDenseDoubleSolve) {
  const std::size_t rows = 60, cols = 40;
  auto op = MatrixOperator(random_matrix(rows, cols, 1), rows, cols);
  const Rhs b = random_rhs(cols, 2);
  auto ops = make_vector_ops_cpu();
  ConjugateGradient cg(cols, *ops);
  std::vector<cfloat> x(cols);
  const CgReport rep = cg.solve(op, b.f.data(), x.data(), {.max_iterations = 200, .tolerance = 1e-7}, false);
  const double e = rel_err(x.data(), dense_normal_solve(op.m(), rows, cols, 0.0, b.d));
  std::printf("CG on a 40-unknown SPD system: %d iterations, residual %.1e, error %.2e\n", rep.iterations,
              rep.residual, e);
  EXPECT_LE(e, 1e-4);
  EXPECT_LE(rep.residual, 1e-7);
  EXPECT_GT(rep.iterations, 5);
}

TEST(Cg, TinyNudftNormalEquationWithTikhonovMatchesDenseSolve) {
  const int N = 8;
  const std::size_t points = 150;
  std::vector<float> traj;
  MatrixOperator op(nudft_matrix(N, points, &traj, 3), points, N * N);
  const Rhs y = random_rhs(points, 4);
  std::vector<cfloat> b(N * N);
  op.adjoint(y.f.data(), b.data());
  std::vector<cd> bd(b.begin(), b.end());
  const double lambda = 5.0;  // ~3 % of the normal matrix's diagonal (150)
  auto ops = make_vector_ops_cpu();
  ConjugateGradient cg(N * N, *ops);
  std::vector<cfloat> x(N * N);
  const CgReport rep =
      cg.solve(op, b.data(), x.data(), {.max_iterations = 300, .tolerance = 1e-7, .lambda = lambda}, false);
  const auto ref = dense_normal_solve(op.m(), points, N * N, lambda, bd);
  const double e = rel_err(x.data(), ref);
  std::printf("CG on the 8x8 NUDFT normal equation (lambda 5): %d iterations, error %.2e\n", rep.iterations,
              e);
  EXPECT_LE(e, 1e-4);

  // The same normal equation through the NUFFT operator (W 6): the plan's accuracy bounds the difference.
  NufftOperatorCpu nufft(2, {N, N, 1}, 1, points, {6, 2.0, 4096});
  nufft.set_points(traj.data());
  std::vector<cfloat> xn(N * N);
  cg.solve(nufft, b.data(), xn.data(), {.max_iterations = 300, .tolerance = 1e-7, .lambda = lambda}, false);
  const double en = rel_err(xn.data(), ref);
  std::printf("  through the NUFFT operator: error %.2e\n", en);
  EXPECT_LE(en, 1e-3);
}

// A solver made without a regularizer's workspace (NLINV's: one vector of the unknowns less) solves as one
// made with it, to the bit, and names the mistake when a solve passes it a regularizer.
TEST(Cg, ASolverMadeWithoutARegularizerSolvesTheSameAndRefusesOne) {
  const std::size_t rows = 60, cols = 40;
  auto op = MatrixOperator(random_matrix(rows, cols, 11), rows, cols);
  const Rhs b = random_rhs(cols, 12);
  auto ops = make_vector_ops_cpu();
  ConjugateGradient with(cols, *ops), without(cols, *ops, false);
  std::vector<cfloat> x1(cols), x2(cols);
  const CgOptions o{.max_iterations = 25, .lambda = 0.5};
  with.solve(op, b.f.data(), x1.data(), o, false);
  without.solve(op, b.f.data(), x2.data(), o, false);
  EXPECT_EQ(x1, x2);
  auto reg = MatrixOperator(random_matrix(cols, cols, 13), cols, cols);
  CgOptions r = o;
  r.mu = 0.1;
  try {
    without.solve(op, b.f.data(), x2.data(), r, false, &reg);
    ADD_FAILURE() << "a regularizer was taken by a solver made without one";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("regularized = false"), std::string::npos) << e.what();
  }
  with.solve(op, b.f.data(), x1.data(), r, false, &reg);  // the one made with it takes it
}

TEST(Cg, WarmStartFromTheSolutionTakesZeroIterations) {
  const std::size_t rows = 50, cols = 30;
  MatrixOperator op(random_matrix(rows, cols, 5), rows, cols);
  const Rhs b = random_rhs(cols, 6);
  auto ops = make_vector_ops_cpu();
  ConjugateGradient cg(cols, *ops);
  const auto ref = dense_normal_solve(op.m(), rows, cols, 0.0, b.d);
  std::vector<cfloat> x(ref.begin(), ref.end());
  const CgReport rep = cg.solve(op, b.f.data(), x.data(), {.max_iterations = 50, .tolerance = 1e-5}, true);
  EXPECT_EQ(rep.iterations, 0);
  EXPECT_LE(rep.residual, 1e-5);
  EXPECT_LE(rel_err(x.data(), ref), 1e-6);
  // Fixed-count mode at the solution: the zero denominators leave it where it is.
  const CgReport fixed = cg.solve(op, b.f.data(), x.data(), {.max_iterations = 3}, true);
  EXPECT_EQ(fixed.iterations, 3);
  EXPECT_LE(rel_err(x.data(), ref), 1e-5);
}

TEST(Cg, FixedCountRunsExactlyThatManyIterationsAndConvergesMonotonically) {
  const std::size_t rows = 80, cols = 50;
  MatrixOperator op(random_matrix(rows, cols, 7), rows, cols);
  const Rhs b = random_rhs(cols, 8);
  auto ops = make_vector_ops_cpu();
  ConjugateGradient cg(cols, *ops);
  const auto ref = dense_normal_solve(op.m(), rows, cols, 0.0, b.d);
  double last = 1e300;
  for (int n : {1, 5, 20, 60}) {
    std::vector<cfloat> x(cols);
    const CgReport rep = cg.solve(op, b.f.data(), x.data(), {.max_iterations = n}, false);
    EXPECT_EQ(rep.iterations, n);
    const double e = rel_err(x.data(), ref);
    EXPECT_LT(e, last) << n << " iterations";
    last = e;
  }
  EXPECT_LE(last, 1e-4);
}

TEST(Cg, NoAllocationPerSolveOnceConstructed) {
  const int N = 16;
  std::vector<float> traj(2 * 300);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> k(-0.5f, 0.5f);
  for (auto& v : traj) v = k(rng);
  NufftOperatorCpu op(2, {N, N, 1}, 2, 300, {4, 2.0, 1024});
  op.set_points(traj.data());
  MatrixOperator reg(random_matrix(2 * N * N, 2 * N * N, 10), 2 * N * N, 2 * N * N);
  auto ops = make_vector_ops_cpu();
  ConjugateGradient cg(2 * N * N, *ops);
  const Rhs b = random_rhs(2 * N * N, 11);
  std::vector<cfloat> x(2 * N * N);
  const CgOptions opt{.max_iterations = 10, .lambda = 0.1, .mu = 0.01};
  cg.solve(op, b.f.data(), x.data(), opt, false, &reg);  // warm-up: threads, lazy runtime state
  const long news = g_news.load();
  const struct mallinfo2 before = mallinfo2();
  cg.solve(op, b.f.data(), x.data(), opt, true, &reg);
  cg.solve(op, b.f.data(), x.data(), {.max_iterations = 25, .tolerance = 1e-9, .lambda = 0.1}, false);
  const struct mallinfo2 after = mallinfo2();
  EXPECT_EQ(g_news.load() - news, 0) << "operator new during a solve";
  EXPECT_EQ(after.uordblks, before.uordblks) << "heap bytes in use changed during a solve";
  EXPECT_EQ(after.hblkhd, before.hblkhd) << "mmapped bytes changed during a solve";
}

TEST(LinearOperator, ChainAndMatricesPassTheAdjointCheck) {
  auto a = std::make_shared<MatrixOperator>(random_matrix(20, 12, 12), 20, 12);
  auto b = std::make_shared<MatrixOperator>(random_matrix(7, 20, 13), 7, 20);
  EXPECT_LE(check_adjoint(*a).relative_error, 1e-6);
  ChainOperator ba(a, b);
  EXPECT_EQ(ba.domain().size(), 12u);
  EXPECT_EQ(ba.codomain().size(), 7u);
  EXPECT_LE(check_adjoint(ba).relative_error, 1e-6);
  // The chain's forward equals the product B A.
  std::vector<cfloat> x(12, cfloat(1.f, -0.5f)), y(7), mid(20), y2(7);
  ba.forward(x.data(), y.data());
  a->forward(x.data(), mid.data());
  b->forward(mid.data(), y2.data());
  for (int i = 0; i < 7; ++i) EXPECT_EQ(y[i], y2[i]);
  EXPECT_THROW(ChainOperator(b, a), ConfigError);
}

// The CPU dot product (CG's step sizes) against an exact double sum, and the same bits for 1, 2 and 3
// OpenMP threads and on every repeat: the host CG reproduces itself whatever the machine's load.
TEST(Cg, HostDotIsTheSameBitsForAnyThreadCountAndMatchesTheDoubleSum) {
  const std::size_t n = 100003;  // not a multiple of the block count
  std::mt19937 rng(5);
  std::normal_distribution<float> g;
  std::vector<cfloat> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = {g(rng), g(rng)}, y[i] = {g(rng), g(rng)};
  long double exact = 0;
  for (std::size_t i = 0; i < n; ++i)
    exact += (long double)x[i].real() * y[i].real() + (long double)x[i].imag() * y[i].imag();
  auto ops = make_vector_ops_cpu();
  std::vector<double> got;
  const int before = omp_get_max_threads();
  for (int threads : {1, 2, 3, 2}) {
    omp_set_num_threads(threads);
    ops->dot_re(x.data(), y.data(), n, 0);
    got.push_back(ops->read(0));
  }
  omp_set_num_threads(before);
  EXPECT_NEAR(got[0], double(exact), 1e-12 * std::sqrt(double(n)) * 2);
  for (double v : got) EXPECT_EQ(v, got[0]);
  ops->dot_re(x.data(), y.data(), 5, 0);  // fewer values than blocks
  double small = 0;
  for (std::size_t i = 0; i < 5; ++i)
    small += double(x[i].real()) * y[i].real() + double(x[i].imag()) * y[i].imag();
  EXPECT_NEAR(ops->read(0), small, 1e-12);
}

// The fused passes give the same bits as the separate calls they replace (same element updates, same blocked
// sums), the limit makes a CG step a no-op, and a posted slot is the value at its place in the order.
TEST(Cg, FusedVectorPassesEqualTheSeparateOnesAndTheLimitStopsAStep) {
  const std::size_t n = 100003;
  std::mt19937 rng(9);
  std::normal_distribution<float> g;
  std::vector<cfloat> x(n), r(n), p(n), q(n);
  for (std::size_t i = 0; i < n; ++i)
    x[i] = {g(rng), g(rng)}, r[i] = {g(rng), g(rng)}, p[i] = {g(rng), g(rng)}, q[i] = {g(rng), g(rng)};
  auto ops = make_vector_ops_cpu();
  // axpy_dot against axpy then dot_re
  std::vector<cfloat> q1 = q, q2 = q;
  ops->axpy(q1.data(), 0.37f, p.data(), n);
  ops->dot_re(p.data(), q1.data(), n, 0);
  ops->axpy_dot(q2.data(), 0.37f, p.data(), n, 1);
  EXPECT_EQ(q1, q2);
  EXPECT_EQ(ops->read(0), ops->read(1));
  // cg_step_norm against the step written out, then dot_re (slots: 2 = <r,r>, 3 = <p,q>)
  ops->dot_re(r.data(), r.data(), n, 2);
  ops->dot_re(p.data(), q1.data(), n, 3);
  std::vector<cfloat> x1 = x, x2 = x, r1 = r, r2 = r;
  ASSERT_GT(ops->read(3), 0);  // the step is taken
  const float alpha = float(ops->read(2) / ops->read(3));
  for (std::size_t i = 0; i < n; ++i) {
    x1[i] += alpha * p[i];
    r1[i] -= alpha * q1[i];
  }
  ops->dot_re(r1.data(), r1.data(), n, 4);
  ops->post(4, 0);
  ops->cg_step_norm(x2.data(), r2.data(), p.data(), q1.data(), n, 2, 3, 5, -1.0);
  EXPECT_EQ(x1, x2);
  EXPECT_EQ(r1, r2);
  EXPECT_EQ(ops->read(4), ops->read(5));
  EXPECT_EQ(ops->fetch(0), ops->read(4));
  EXPECT_NE(x2, x);  // a real step
  // with <r,r> at the limit the step is a no-op and <r,r> stays
  std::vector<cfloat> x3 = x, r3 = r;
  ops->cg_step_norm(x3.data(), r3.data(), p.data(), q1.data(), n, 2, 3, 6, ops->read(2));
  EXPECT_EQ(x3, x);
  EXPECT_EQ(r3, r);
  EXPECT_EQ(ops->read(6), ops->read(2));
}
