// The Gauss-Newton solver of the iteration floor (iter/irgnm.hpp) over a nonlinear operator that is not
// NLINV's: F(x) = A (x . x) with A a random dense complex m x n matrix. The derivative passes the adjoint
// test, and the solve recovers x* from y = F(x*) (started in x*'s basin: F cannot tell x from -x entry by
// entry), its residual and error shrinking as alpha does. NLINV's own use of the solver is tested in
// test_nlinv.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "iter/irgnm.hpp"
#include "linalg/adjoint_check.hpp"
#include "linalg/vector_ops.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

class SquaredMix final : public NonlinearOperator {
 public:
  SquaredMix(std::size_t n, std::size_t m, unsigned seed) : n_(n), m_(m), a_(n * m), x_(n), jac_(*this) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> g(0.f, 1.f / std::sqrt(float(n)));
    for (auto& v : a_) v = cfloat(g(rng), g(rng));
  }
  Location location() const override { return Location::Host; }
  std::size_t domain_size() const override { return n_; }
  std::size_t codomain_size() const override { return m_; }
  void linearize(const cfloat* x) override { x_.assign(x, x + n_); }
  void value(const cfloat* x, cfloat* out) const {
    std::vector<cfloat> sq(n_);
    for (std::size_t i = 0; i < n_; ++i) sq[i] = x[i] * x[i];
    mix(sq.data(), out);
  }
  void gradient(const cfloat* y, cfloat* r, cfloat* b) override {
    value(x_.data(), r);
    for (std::size_t k = 0; k < m_; ++k) r[k] = y[k] - r[k];
    jac_.adjoint(r, b);
  }
  LinearOperator& derivative() override { return jac_; }

 private:
  // out = A v, and its adjoint.
  void mix(const cfloat* v, cfloat* out) const {
    for (std::size_t k = 0; k < m_; ++k) {
      cfloat s{};
      for (std::size_t i = 0; i < n_; ++i) s += a_[k * n_ + i] * v[i];
      out[k] = s;
    }
  }
  void mix_adjoint(const cfloat* r, cfloat* out) const {
    for (std::size_t i = 0; i < n_; ++i) {
      cfloat s{};
      for (std::size_t k = 0; k < m_; ++k) s += std::conj(a_[k * n_ + i]) * r[k];
      out[i] = s;
    }
  }
  // F'(x) v = A (2 x . v), F'(x)^H r = 2 conj(x) . A^H r.
  class Jacobian final : public LinearOperator {
   public:
    explicit Jacobian(SquaredMix& f)
        : LinearOperator(Extents{f.n_}, Extents{f.m_}, Location::Host), f_(f), v_(f.n_) {}
    void forward(const cfloat* v, cfloat* out) override {
      for (std::size_t i = 0; i < f_.n_; ++i) v_[i] = 2.f * f_.x_[i] * v[i];
      f_.mix(v_.data(), out);
    }
    void adjoint(const cfloat* r, cfloat* out) override {
      f_.mix_adjoint(r, out);
      for (std::size_t i = 0; i < f_.n_; ++i) out[i] *= 2.f * std::conj(f_.x_[i]);
    }

   private:
    SquaredMix& f_;
    std::vector<cfloat> v_;
  };

  std::size_t n_, m_;
  std::vector<cfloat> a_, x_;
  Jacobian jac_;
};

double rel(const std::vector<cfloat>& a, const std::vector<cfloat>& b) {
  double d = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d += std::norm(std::complex<double>(a[i]) - std::complex<double>(b[i]));
    n += std::norm(std::complex<double>(b[i]));
  }
  return std::sqrt(d / n);
}

}  // namespace

TEST(Irgnm, SolvesANonlinearOperatorThatIsNotNlinv) {
  const std::size_t n = 16, m = 40;
  SquaredMix f(n, m, 7);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> phase(0.f, 6.2831853f), small(-0.1f, 0.1f);
  std::vector<cfloat> truth(n), x(n), y(m);
  for (auto& v : truth) v = std::polar(1.f, phase(rng));
  for (std::size_t i = 0; i < n; ++i) x[i] = truth[i] * (1.f + cfloat(small(rng), small(rng)));
  f.value(truth.data(), y.data());
  f.linearize(x.data());
  const AdjointCheck adj = check_adjoint(f.derivative(), 5);
  std::printf("the derivative's adjoint test: %.3g\n", adj.relative_error);
  EXPECT_LE(adj.relative_error, 1e-5);
  const double start_error = rel(x, truth);
  // Regularized toward the start (x_ref): alpha halves each step, so the pull toward it fades.
  const std::vector<cfloat> ref = x;
  Irgnm solver(f, make_vector_ops_cpu());
  IrgnmParams p;
  double last_error = start_error;
  for (int steps : {2, 6, 16}) {
    std::vector<cfloat> xs = x;
    p.newton_steps = steps;
    const IrgnmReport rep = solver.solve(p, xs.data(), ref.data(), y.data());
    const double e = rel(xs, truth);
    std::printf(
        "%2d Newton steps: %d CG iterations, error %.3g (from %.3g), residual before the last step %.3g\n",
        steps, rep.cg_iterations, e, start_error, rep.final_residual);
    EXPECT_EQ(rep.newton_steps, steps);
    EXPECT_GT(rep.cg_iterations, steps) << "a step takes more than one CG iteration: A mixes the entries";
    EXPECT_LT(e, last_error);
    last_error = e;
  }
  EXPECT_LE(last_error, 1e-3);
  // Without vector operations (or with some at another place than the operator's) it is refused.
  EXPECT_THROW(Irgnm(f, nullptr), ConfigError);
}

// One Newton step (alpha_0 = 1, regularized toward x_ref) against the same step solved densely in double:
// (J^H J + I) h = J^H (y - F(x)) + (x_ref - x), J = F'(x) built column by column from the derivative. The CG
// stops by BART's legacy rule, so the step is held to that rule's residual, and to the dense step within 15 %
// of the move, where leaving out x_ref's pull lands far off.
TEST(Irgnm, ANewtonStepEqualsTheDenseSolveInDouble) {
  const std::size_t n = 12, m = 30;
  SquaredMix f(n, m, 11);
  std::mt19937 rng(5);
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<cfloat> truth(n), x(n), ref(n), y(m);
  for (auto& v : truth) v = cfloat(g(rng), g(rng));
  // Near the solution and the reference near x: the right-hand side is small, so that BART's legacy stopping
  // rule (||r|| <= (0.1 ||b||)^2, not scale-free) asks the CG for a relative residual near 1e-5.
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = truth[i] + 1e-3f * cfloat(g(rng), g(rng));
    ref[i] = x[i] + 1e-3f * cfloat(g(rng), g(rng));
  }
  f.value(truth.data(), y.data());
  // The dense system at x.
  f.linearize(x.data());
  std::vector<std::complex<double>> jac(m * n), normal(n * n), rhs(n);
  std::vector<cfloat> e(n), col(m), r(m), b(n);
  for (std::size_t j = 0; j < n; ++j) {
    std::fill(e.begin(), e.end(), cfloat{});
    e[j] = 1.f;
    f.derivative().forward(e.data(), col.data());
    for (std::size_t k = 0; k < m; ++k) jac[k * n + j] = col[k];
  }
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < n; ++j) {
      std::complex<double> s = i == j ? 1.0 : 0.0;
      for (std::size_t k = 0; k < m; ++k) s += std::conj(jac[k * n + i]) * jac[k * n + j];
      normal[i * n + j] = s;
    }
  f.gradient(y.data(), r.data(), b.data());
  for (std::size_t i = 0; i < n; ++i)
    rhs[i] = std::complex<double>(b[i]) + std::complex<double>(ref[i]) - std::complex<double>(x[i]);
  const auto h = test::dense_solve(normal, n, 0.0, rhs);
  std::vector<cfloat> direct(n);
  for (std::size_t i = 0; i < n; ++i) direct[i] = cfloat(std::complex<double>(x[i]) + h[i]);
  // The solver's step.
  Irgnm solver(f, make_vector_ops_cpu());
  IrgnmParams p;
  p.newton_steps = 1;
  std::vector<cfloat> stepped = x;
  const IrgnmReport rep = solver.solve(p, stepped.data(), ref.data(), y.data());
  const double d = rel(stepped, direct), moved = rel(x, direct);
  // The solver's step solves the dense system as far as BART's legacy rule asks: ||r|| <= 0.01 ||b||^2, a
  // relative residual of 0.01 ||b|| (float's rounding aside).
  double res = 0, nr = 0;
  for (std::size_t i = 0; i < n; ++i) {
    std::complex<double> e = -rhs[i];
    for (std::size_t j = 0; j < n; ++j)
      e += normal[i * n + j] * (std::complex<double>(stepped[j]) - std::complex<double>(x[j]));
    res += std::norm(e);
    nr += std::norm(rhs[i]);
  }
  const double residual = std::sqrt(res / nr), rule = 0.01 * std::sqrt(nr);
  std::printf(
      "one Newton step: %d CG iterations; the dense system's relative residual %.3g (the rule's %.3g); "
      "against "
      "the dense solve %.3g (the start was %.3g away)\n",
      rep.cg_iterations, residual, rule, d, moved);
  EXPECT_GT(rep.cg_iterations, 3);
  EXPECT_LE(residual, 1.5 * rule);
  EXPECT_LE(d, 0.15 * moved);
  // A step without the regularizer's pull toward x_ref is another point: the test tells them apart.
  std::vector<cfloat> unpulled = x;
  solver.solve(p, unpulled.data(), nullptr, y.data());
  EXPECT_GT(rel(unpulled, direct), 10 * d);
}
