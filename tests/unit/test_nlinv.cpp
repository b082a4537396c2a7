// NLINV's model on the CPU against its definitions: the Jacobian against a central difference of F (exact up
// to rounding: F is bilinear in rho and c), the second-order remainder F(x+v) - F(x) - DF v = D U(M drho dc)
// exactly, DG and DG^H as an adjoint pair, and the Toeplitz normal DG^H D DG against the raw-sample normal
// (A M DG')^H (A M DG') applied through the NUFFT itself.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

#include "core/deadline_reserve.hpp"
#include "core/trajectory.hpp"
#include "io/frame_io.hpp"
#include "io/image_stats.hpp"
#include "linalg/adjoint_check.hpp"
#include "linalg/hermitian_eigen.hpp"
#include "nlinv/coil_compression.hpp"
#include "nlinv/nlinv_cpu.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "sim/coil_maps.hpp"
#include "sim/phantom.hpp"
#include "sim/simulator.hpp"

using namespace radstream;

namespace {

constexpr int kN = 32, kCoils = 3, kSpokes = 11, kSamples = 64;

std::vector<float> radial_traj() {
  std::vector<float> t(std::size_t(kSpokes) * kSamples * 2);
  for (int s = 0; s < kSpokes; ++s)
    spoke_coordinates(std::numbers::pi * s / kSpokes, kSamples,
                      std::span<float>(t.data() + std::size_t(s) * kSamples * 2, std::size_t(kSamples) * 2));
  return t;
}

std::vector<cfloat> random_vector(std::size_t n, unsigned seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<cfloat> v(n);
  for (auto& x : v) x = {d(rng), d(rng)};
  return v;
}

double rel_diff(const std::vector<cfloat>& a, const std::vector<cfloat>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(std::complex<double>(a[i]) - std::complex<double>(b[i]));
    den += std::norm(std::complex<double>(b[i]));
  }
  return std::sqrt(num / den);
}

// A frame's NLINV with D from a radial trajectory and a random point of linearization.
struct Fixture {
  NlinvParams p;
  NlinvCpu nlinv{kN, kCoils, std::size_t(kSpokes) * kSamples, p, 1};
  std::vector<float> traj = radial_traj();
  std::vector<cfloat> x;
  Fixture() {
    const auto samples = random_vector(std::size_t(kCoils) * kSpokes * kSamples, 7);
    nlinv.grid_frame(traj.data(), samples.data());
    x = random_vector(nlinv.model().unknowns(), 3);
  }
  NlinvModel& m() { return nlinv.model(); }
  NlinvModelCpu& cpu() { return static_cast<NlinvModelCpu&>(nlinv.model()); }
  std::vector<cfloat> F(const std::vector<cfloat>& at) {
    std::vector<cfloat> out(m().data_size());
    m().linearize(at.data());
    m().value(out.data());
    return out;
  }
};

}  // namespace

TEST(Nlinv, TheJacobianIsTheDerivativeOfTheModel) {
  Fixture f;
  const auto v = random_vector(f.m().unknowns(), 11);
  const float eps = 1e-2f;
  std::vector<cfloat> xp(f.x), xm(f.x);
  for (std::size_t i = 0; i < v.size(); ++i) {
    xp[i] += eps * v[i];
    xm[i] -= eps * v[i];
  }
  const auto fp = f.F(xp), fm = f.F(xm);
  std::vector<cfloat> central(fp.size());
  for (std::size_t i = 0; i < fp.size(); ++i) central[i] = (fp[i] - fm[i]) / (2 * eps);
  std::vector<cfloat> dfv(f.m().data_size());
  f.m().linearize(f.x.data());
  f.m().derivative(v.data(), dfv.data());
  for (std::size_t i = 0; i < dfv.size(); ++i) dfv[i] *= f.m().pattern()[i % f.m().pixels()];
  // F is bilinear: the central difference has no truncation error, only float rounding.
  EXPECT_LT(rel_diff(central, dfv), 1e-4);

  // The remainder of the one-sided difference is exactly the bilinear term D U(M drho dc): checked against
  // the model itself at (drho, chat = dchat) with rho's part of the point set to zero.
  const auto f0 = f.F(f.x);
  std::vector<cfloat> xv(f.x);
  for (std::size_t i = 0; i < v.size(); ++i) xv[i] += v[i];
  const auto f1 = f.F(xv);
  const auto second = f.F(v);  // F(v) = D U(M drho dc) for v = (drho, dchat)
  std::vector<cfloat> remainder(f1.size());
  for (std::size_t i = 0; i < f1.size(); ++i) remainder[i] = f1[i] - f0[i] - dfv[i];
  EXPECT_LT(rel_diff(remainder, second), 1e-4);
}

TEST(Nlinv, TheJacobianAndItsAdjointAreAnAdjointPair) {
  Fixture f;
  f.m().linearize(f.x.data());
  NlinvJacobian jac(f.m());
  const auto r = check_adjoint(jac, 5);
  EXPECT_LT(r.relative_error, 1e-5) << r.lhs << " vs " << r.rhs;
}

TEST(Nlinv, TheToeplitzNormalEqualsTheRawSampleNormalThroughTheNufft) {
  Fixture f;
  auto& m = f.m();
  m.linearize(f.x.data());
  const int g = m.grid();
  const auto v = random_vector(m.unknowns(), 13);
  std::vector<cfloat> toeplitz(m.unknowns());
  m.normal(v.data(), toeplitz.data());

  // (A M DG')^H (A M DG') v with DG' v = U^H DG v (masked already) and A = E / N through the NUFFT.
  std::vector<cfloat> img(m.data_size()), back(m.data_size());
  m.derivative(v.data(), img.data());
  m.unitary(img.data(), kCoils, true);
  NufftKernel kernel;
  kernel.width = 6;
  NufftOperatorCpu a(2, {g, g, 1}, kCoils, std::size_t(kSpokes) * kSamples, kernel);
  a.set_points(f.traj.data());
  std::vector<cfloat> s(std::size_t(kCoils) * kSpokes * kSamples);
  a.forward(img.data(), s.data());
  a.adjoint(s.data(), back.data());
  for (auto& z : back) z /= float(kN) * float(kN);
  m.unitary(back.data(), kCoils, false);
  std::vector<cfloat> direct(m.unknowns());
  m.derivative_adjoint(back.data(), direct.data());
  EXPECT_LT(rel_diff(toeplitz, direct), 2e-4);
}

TEST(Nlinv, TheSobolevWeightIsBartsAtTheCentreAndTheEdge) {
  Fixture f;
  const int g = f.m().grid();
  EXPECT_EQ(g, 2 * kN);
  EXPECT_FLOAT_EQ(f.cpu().sobolev()[0], 1.f);  // k = 0
  // k = (-1/2, 0): (1 + 220 / 4)^(-16)
  EXPECT_NEAR(f.cpu().sobolev()[g / 2], std::pow(1.0 + 220.0 / 4, -16.0), 1e-30);
  EXPECT_NEAR(f.cpu().sobolev()[1], std::pow(1.0 + 220.0 / (g * g), -16.0), 1e-6);
}

namespace {

// The phantom at time t as NLINV sees it: the object times the root-sum-of-squares of the coil maps.
std::vector<float> coil_weighted_truth(const Simulator& sim, const CoilMaps& maps, double t, int n) {
  auto img = rasterize(sim.ellipses_at(t), n);
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < n; ++i) {
      const double x = (i - n / 2) * 2.0 / n, y = (j - n / 2) * 2.0 / n;
      double power = 0;
      for (int c = 0; c < maps.coils(); ++c) power += std::norm(maps.value(c, x, y));
      img[std::size_t(j) * n + i] *= float(std::sqrt(power));
    }
  return img;
}

struct SeriesErrors {
  std::vector<double> vs_now, vs_first;  // per frame: against the truth at the frame's time, at frame 0's
};

// `frames` NLINV frames of 13 turn-based spokes (5 turns) at 650 spokes/s (20 ms a frame).
SeriesErrors nlinv_series(bool motion, int frames) {
  constexpr int n = 48, spokes = 13;
  SimParams sp;
  sp.matrix = n;
  sp.coils = 4;
  sp.angles = "turns";
  sp.spokes_per_rotation = spokes;
  sp.turns = 5;
  sp.rate_hz = 650;
  sp.motion = motion;
  sp.motion_period_s = 0.6;  // the tip crosses the object within the series
  const Simulator sim(sp);
  const CoilMaps maps(sp.coils);
  NlinvParams p;
  p.newton = 6;
  NlinvCpu nlinv(n, sp.coils, std::size_t(spokes) * sim.samples(), p, 1);
  SeriesErrors e;
  const auto first = coil_weighted_truth(sim, maps, (spokes / 2) / sp.rate_hz, n);
  std::vector<cfloat> img(std::size_t(n) * n);
  for (int f = 0; f < frames; ++f) {
    const auto s = sim.spokes(std::uint64_t(f) * spokes, spokes);
    const Frame fr = frame_from_spokes(sim.header(), s);
    nlinv.reconstruct(fr.traj.data(), fr.data.data(), img.data());
    const double t_mid = (f * spokes + spokes / 2) / sp.rate_hz;
    const auto m = magnitude(img);
    e.vs_now.push_back(nrmse_scaled(m, coil_weighted_truth(sim, maps, t_mid, n)));
    e.vs_first.push_back(nrmse_scaled(m, first));
  }
  return e;
}

double mean_of(const std::vector<double>& v, std::size_t from) {
  double s = 0;
  for (std::size_t i = from; i < v.size(); ++i) s += v[i];
  return s / double(v.size() - from);
}

}  // namespace

// Temporal regularization: on the static phantom the error falls over the first frames (each frame starts
// from and is damped toward the one before); on the moving phantom the converged frames are within 1.2x of
// the static error against the moving truth, and closer to the truth of their own time than to frame 0's.
TEST(Nlinv, TheSeriesConvergesAndFollowsTheMotion) {
  const auto still = nlinv_series(false, 15);
  const auto moving = nlinv_series(true, 15);
  for (std::size_t f = 0; f < still.vs_now.size(); ++f)
    std::printf("frame %2zu: static %.4f, moving %.4f (vs frame 0's truth %.4f)\n", f, still.vs_now[f],
                moving.vs_now[f], moving.vs_first[f]);
  EXPECT_LT(mean_of(still.vs_now, 10), 0.8 * still.vs_now[0]);
  EXPECT_LT(still.vs_now[4], still.vs_now[0]);
  EXPECT_LE(mean_of(moving.vs_now, 10), 1.2 * mean_of(still.vs_now, 10));
  EXPECT_LT(mean_of(moving.vs_now, 10), mean_of(moving.vs_first, 10));
}

TEST(Nlinv, HermitianEigenDecomposesARandomHermitianMatrix) {
  constexpr int n = 12;
  std::mt19937 rng(4);
  std::normal_distribution<double> d;
  std::vector<std::complex<double>> a(n * n);
  for (int r = 0; r < n; ++r)
    for (int c = r; c < n; ++c) {
      a[r * n + c] = r == c ? std::complex<double>(d(rng), 0) : std::complex<double>(d(rng), d(rng));
      a[c * n + r] = std::conj(a[r * n + c]);
    }
  const auto e = hermitian_eigen(a, n);
  for (int k = 1; k < n; ++k) EXPECT_GE(e.values[k - 1], e.values[k]);
  double worst = 0, unitary = 0;
  for (int k = 0; k < n; ++k)
    for (int r = 0; r < n; ++r) {
      std::complex<double> av = 0;
      for (int c = 0; c < n; ++c) av += a[r * n + c] * e.vectors[c * n + k];
      worst = std::max(worst, std::abs(av - e.values[k] * e.vectors[r * n + k]));
      std::complex<double> g = 0;  // (V^H V)_{k r}
      for (int c = 0; c < n; ++c) g += std::conj(e.vectors[c * n + k]) * e.vectors[c * n + r];
      unitary = std::max(unitary, std::abs(g - (k == r ? 1.0 : 0.0)));
    }
  EXPECT_LT(worst, 1e-10);
  EXPECT_LT(unitary, 1e-12);
}

// Data of rank 3 in 8 coils: 3 virtual coils keep all of its energy and give the data back exactly
// (x_a = sum_v y_v conj(W_av)); 2 keep less.
TEST(Nlinv, CoilCompressionKeepsTheDataOfLowRank) {
  constexpr int coils = 8, rank = 3;
  constexpr std::size_t points = 500;
  const auto src = random_vector(rank * points, 21);
  const auto mix = random_vector(rank * coils, 22);
  std::vector<cfloat> x(coils * points);
  for (int a = 0; a < coils; ++a)
    for (std::size_t p = 0; p < points; ++p)
      for (int s = 0; s < rank; ++s) x[a * points + p] += mix[s * coils + a] * src[s * points + p];
  const auto cc = coil_compression(x.data(), coils, points, rank);
  EXPECT_NEAR(cc.kept_energy, 1.0, 1e-6);
  std::vector<cfloat> back(x.size());
  for (std::size_t p = 0; p < points; ++p)
    for (int v = 0; v < rank; ++v) {
      cfloat y{};
      for (int a = 0; a < coils; ++a) y += x[a * points + p] * cc.matrix[a * rank + v];
      for (int a = 0; a < coils; ++a) back[a * points + p] += y * std::conj(cc.matrix[a * rank + v]);
    }
  EXPECT_LT(rel_diff(back, x), 1e-5);
  EXPECT_LT(coil_compression(x.data(), coils, points, 2).kept_energy, 0.999);
}

// The deadline on a clock the test drives: every reading advances it by 1 ms (a CG iteration or a Newton
// step's set-up costs 1 ms), the budget is 12 ms. The solve stops early, its last reading within the budget,
// and the image it delivers is the iterate reached (finite, and closer to the full solve's than the start).
TEST(Nlinv, ADeadlineStopsTheSolveEarlyWithTheBestIterate) {
  SimParams sp;
  sp.matrix = 32;
  sp.coils = 3;
  const Simulator sim(sp);
  const Frame fr = frame_from_spokes(sim.header(), sim.spokes(0, 21));
  NlinvParams full;
  full.newton = 6;
  NlinvCpu reference(32, 3, std::size_t(21) * sim.samples(), full, 1);
  std::vector<cfloat> img_full(32 * 32), img(32 * 32);
  const auto rep_full = reference.reconstruct(fr.traj.data(), fr.data.data(), img_full.data());
  EXPECT_FALSE(rep_full.irgnm.stopped_early);

  NlinvParams p = full;
  p.deadline_ms = 12;
  NlinvCpu limited(32, 3, std::size_t(21) * sim.samples(), p, 1);
  double clock = 0, last = 0;
  limited.irgnm().set_clock([&] {
    clock += 1.0;
    last = clock;
    return clock;
  });
  const auto rep = limited.reconstruct(fr.traj.data(), fr.data.data(), img.data());
  std::printf(
      "deadline 12 ms: %d Newton steps, %d CG iterations (full: %d, %d); last clock reading %.0f ms\n",
      rep.irgnm.newton_steps, rep.irgnm.cg_iterations, rep_full.irgnm.newton_steps,
      rep_full.irgnm.cg_iterations, last);
  EXPECT_TRUE(rep.irgnm.stopped_early);
  EXPECT_LE(last, 12.0);
  EXPECT_LT(rep.irgnm.cg_iterations, rep_full.irgnm.cg_iterations);
  for (const auto& v : img) ASSERT_TRUE(std::isfinite(v.real()) && std::isfinite(v.imag()));
  EXPECT_LT(nrmse_scaled(magnitude(img), magnitude(img_full)), 0.9);
}

namespace {

// The deadline tests' case: 21 spokes of a 32^2, 3-coil simulator, 6 Newton steps, a 12 ms budget, solved on
// the host under a clock the test drives (every reading 1 ms later), with or without running ahead and with a
// tail (the output's time) known up front or not. `last` gets the last clock reading, `img` the image.
struct DrivenDeadline {
  static SimParams params() {
    SimParams sp;
    sp.matrix = 32;
    sp.coils = 3;
    return sp;
  }
  Simulator sim{params()};
  Frame fr = frame_from_spokes(sim.header(), sim.spokes(0, 21));
  IrgnmReport solve(bool ahead, double tail_ms, double& last, std::vector<cfloat>& img) const {
    NlinvParams p;
    p.newton = 6;
    p.deadline_ms = 12;
    NlinvCpu s(32, 3, std::size_t(21) * sim.samples(), p, 1);
    s.irgnm().set_run_ahead(ahead);
    double clock = 0;
    s.irgnm().set_clock([&] { return last = clock += 1.0; });
    if (tail_ms > 0) s.irgnm().note_tail(tail_ms);
    img.assign(32 * 32, {});
    return s.reconstruct(fr.traj.data(), fr.data.data(), img.data()).irgnm;
  }
};

}  // namespace

// The deadline reserves the frame's tail after the iterations (the output): a tail slower than a CG
// iteration, once seen, stops the next solves earlier, so that iterations + tail still fit the budget.
TEST(Nlinv, TheDeadlineReservesTheSlowestTailAfterTheIterations) {
  const DrivenDeadline d;
  const auto solve = [&](double tail_ms, double& last) {
    std::vector<cfloat> img;
    const auto rep = d.solve(false, tail_ms, last, img);
    for (const auto& v : img) EXPECT_TRUE(std::isfinite(v.real()) && std::isfinite(v.imag()));
    return rep;
  };
  double last_plain = 0, last_tail = 0;
  const auto plain = solve(0, last_plain);
  const auto tail = solve(4.0, last_tail);
  std::printf("deadline 12 ms: %d CG iterations, last reading %.0f; with a 4 ms tail known: %d, last %.0f\n",
              plain.cg_iterations, last_plain, tail.cg_iterations, last_tail);
  EXPECT_TRUE(plain.stopped_early);
  EXPECT_TRUE(tail.stopped_early);
  EXPECT_LT(tail.cg_iterations, plain.cg_iterations);
  EXPECT_LE(last_tail + 4.0, 12.0);  // the iterations end early enough for the tail to fit
}

// The GPU's CG enqueues its next iteration before it looks at the last one's |r|. On the host the same
// schedule (turned on for the test) must give the same iterates bit for bit and the same iteration counts as
// looking at every |r| at once: an iteration enqueued after convergence is a no-op, and at most one per
// Newton step is spent that way.
// The relative CG rule (nlinv_cg_rule: relative, ||r|| <= 0.1 ||b|| in every Newton step) against BART's
// legacy one (||r|| <= (0.1 ||b||)^2): on three frames of the phantom stream, on the 2x and the 1.5x grid, it
// reconstructs the legacy rule's image within 4% scaled NRMSE once a frame starts from the one before (the
// stream's first frame, from rho = 1 and neither solve converged, within 12%: 2.6% on the 2x grid, 10.7% on
// the 1.5x), in about half the CG iterations on the later frames (31 against 58-62), and stops each CG after
// at least one iteration, at most newton_cg_max.
TEST(Nlinv, TheRelativeCgRuleGivesTheLegacyRulesImage) {
  SimParams sp;
  sp.matrix = 32;
  sp.coils = 3;
  const Simulator sim(sp);
  const std::size_t points = std::size_t(21) * sim.samples();
  for (double os : {2.0, 1.5}) {
    SCOPED_TRACE("grid_os " + std::to_string(os));
    NlinvParams p;
    p.newton = 6;
    p.grid_os = os;
    NlinvCpu legacy(32, 3, points, p, 1);
    p.cg_rule = NlinvCgRule::Relative;
    NlinvCpu relative(32, 3, points, p, 1);
    for (int f = 0; f < 3; ++f) {
      const Frame fr = frame_from_spokes(sim.header(), sim.spokes(std::uint64_t(21 * f), 21));
      std::vector<cfloat> a(32 * 32), b(32 * 32);
      const auto ra = legacy.reconstruct(fr.traj.data(), fr.data.data(), a.data());
      const auto rb = relative.reconstruct(fr.traj.data(), fr.data.data(), b.data());
      const double e = nrmse_scaled(magnitude(b), magnitude(a));
      std::printf("grid %.1fx frame %d: legacy %d CG iterations, relative %d; relative vs legacy %.4f\n", os,
                  f, ra.irgnm.cg_iterations, rb.irgnm.cg_iterations, e);
      EXPECT_LT(e, f == 0 ? 0.12 : 0.04) << "frame " << f;
      EXPECT_GE(rb.irgnm.cg_iterations, rb.irgnm.newton_steps);
      EXPECT_LE(rb.irgnm.cg_iterations, rb.irgnm.newton_steps * p.newton_cg_max);
    }
  }
}

TEST(Nlinv, RunningTheCgAheadChangesNoResult) {
  SimParams sp;
  sp.matrix = 32;
  sp.coils = 3;
  const Simulator sim(sp);
  NlinvParams p;
  p.newton = 6;
  const std::size_t points = std::size_t(21) * sim.samples();
  NlinvCpu plain(32, 3, points, p, 1), ahead(32, 3, points, p, 1);
  ahead.irgnm().set_run_ahead(true);
  int spent = 0;
  for (int f = 0; f < 3; ++f) {
    const Frame fr = frame_from_spokes(sim.header(), sim.spokes(std::uint64_t(21 * f), 21));
    std::vector<cfloat> a(32 * 32), b(32 * 32);
    const auto ra = plain.reconstruct(fr.traj.data(), fr.data.data(), a.data());
    const auto rb = ahead.reconstruct(fr.traj.data(), fr.data.data(), b.data());
    std::printf("frame %d: %d CG iterations (run ahead: %d, %d spent past convergence)\n", f,
                ra.irgnm.cg_iterations, rb.irgnm.cg_iterations, rb.irgnm.cg_run_ahead_spent);
    EXPECT_EQ(ra.irgnm.cg_iterations, rb.irgnm.cg_iterations);
    EXPECT_EQ(ra.irgnm.cg_run_ahead_spent, 0);
    EXPECT_LE(rb.irgnm.cg_run_ahead_spent, rb.irgnm.newton_steps);
    EXPECT_EQ(a, b);
    spent += rb.irgnm.cg_run_ahead_spent;
  }
  std::printf("%d iterations spent past convergence in 3 frames\n", spent);
}

// Under a deadline the CG does not run ahead (on the H200 it missed more frames that way: 12 and 25 of
// 29,957 against 3 of 19,962): with running ahead turned on, a solve under the driven clock (every reading 1
// ms later, 12 ms budget) reads the clock, iterates and delivers exactly as one without it.
TEST(Nlinv, UnderADeadlineTheCgDoesNotRunAhead) {
  const DrivenDeadline d;
  double last_plain = 0, last_ahead = 0;
  std::vector<cfloat> img_plain, img_ahead;
  const auto plain = d.solve(false, 0, last_plain, img_plain);
  const auto ahead = d.solve(true, 0, last_ahead, img_ahead);
  std::printf("deadline 12 ms, run ahead on: %d CG iterations, last reading %.0f (off: %d, %.0f)\n",
              ahead.cg_iterations, last_ahead, plain.cg_iterations, last_plain);
  EXPECT_TRUE(ahead.stopped_early);
  EXPECT_EQ(ahead.cg_iterations, plain.cg_iterations);
  EXPECT_EQ(ahead.cg_run_ahead_spent, 0);
  EXPECT_EQ(last_ahead, last_plain);
  EXPECT_LE(last_ahead, 12.0);
  EXPECT_EQ(img_ahead, img_plain);
}

// A frame that ended past its deadline (an overrun the timings did not foresee: a host or GPU hiccup) is
// reserved in the next frames' deadline: under the driven clock (every reading 1 ms later, 12 ms budget) a
// 2 ms overrun noted after frame 1 ends frame 2's iterations at least 2 ms earlier than a twin's without it;
// the reserve is capped at a quarter of the deadline and fades by 0.01% a frame.
TEST(Nlinv, AnOverrunIsReservedInTheNextFramesDeadline) {
  const DrivenDeadline d;  // its simulator and first frame; two solvers kept over two frames here
  const Simulator& sim = d.sim;
  NlinvParams p;
  p.newton = 6;
  p.deadline_ms = 12;
  const std::size_t points = std::size_t(21) * sim.samples();
  NlinvCpu plain(32, 3, points, p, 1), warned(32, 3, points, p, 1);
  double clock_plain = 0, clock_warned = 0, last_plain = 0, last_warned = 0;
  plain.irgnm().set_clock([&] { return last_plain = clock_plain += 1.0; });
  warned.irgnm().set_clock([&] { return last_warned = clock_warned += 1.0; });
  std::vector<cfloat> a(32 * 32), b(32 * 32);
  const Frame& f1 = d.fr;
  const auto a1 = plain.reconstruct(f1.traj.data(), f1.data.data(), a.data());
  const auto b1 = warned.reconstruct(f1.traj.data(), f1.data.data(), b.data());
  EXPECT_EQ(a1.irgnm.cg_iterations, b1.irgnm.cg_iterations);
  EXPECT_EQ(b1.irgnm.deadline_reserve_ms, 0.0);  // a driven clock's frames are timed by the test
  warned.irgnm().note_overrun(2.0);
  EXPECT_EQ(warned.irgnm().reserve_ms(), 2.0);
  clock_plain = clock_warned = 0;
  const Frame f2 = frame_from_spokes(sim.header(), sim.spokes(21, 21));
  const auto a2 = plain.reconstruct(f2.traj.data(), f2.data.data(), a.data());
  const auto b2 = warned.reconstruct(f2.traj.data(), f2.data.data(), b.data());
  std::printf(
      "frame 2: %d CG iterations, last reading %.0f; after a 2 ms overrun: %d, last %.0f (reserve %.4f)\n",
      a2.irgnm.cg_iterations, last_plain, b2.irgnm.cg_iterations, last_warned, b2.irgnm.deadline_reserve_ms);
  EXPECT_TRUE(a2.irgnm.stopped_early);
  EXPECT_TRUE(b2.irgnm.stopped_early);
  EXPECT_LT(b2.irgnm.cg_iterations, a2.irgnm.cg_iterations);
  EXPECT_LE(last_warned + 2.0, last_plain);
  EXPECT_NEAR(b2.irgnm.deadline_reserve_ms, 2.0 * 0.9999, 1e-12);
  warned.irgnm().note_overrun(100.0);
  EXPECT_DOUBLE_EQ(warned.irgnm().reserve_ms(), 3.0);  // a quarter of the 12 ms deadline
  for (const auto& v : b) EXPECT_TRUE(std::isfinite(v.real()) && std::isfinite(v.imag()));
}

// Under a deadline the warm-up (at configure) runs twice and keeps the second run's timings, so the stream's
// first frame knows what its output costs; without a deadline nothing is timed; no reserve is kept from it.
TEST(Nlinv, UnderADeadlineTheWarmUpTimesTheOutputForTheFirstFrame) {
  const DrivenDeadline d;
  const std::size_t points = std::size_t(21) * d.sim.samples();
  NlinvParams p;
  p.newton = 2;
  NlinvCpu plain(32, 3, points, p, 1);
  plain.warm_up();
  EXPECT_EQ(plain.irgnm().slowest_tail_ms(), 0.0);
  p.deadline_ms = 1e-3;  // every run overruns it
  NlinvCpu timed(32, 3, points, p, 1);
  timed.warm_up();
  std::printf("after the warm-up: slowest tail %.4f ms, reserve %.4f ms\n", timed.irgnm().slowest_tail_ms(),
              timed.irgnm().reserve_ms());
  EXPECT_GT(timed.irgnm().slowest_tail_ms(), 0.0);
  EXPECT_EQ(timed.irgnm().reserve_ms(), 0.0);
  std::vector<cfloat> a(32 * 32), b(32 * 32);
  const auto ra = plain.reconstruct(d.fr.traj.data(), d.fr.data.data(), a.data());
  EXPECT_EQ(ra.irgnm.newton_steps, 2);  // the warm-up left no state behind: a first frame
  timed.reconstruct(d.fr.traj.data(), d.fr.data.data(), b.data());
  EXPECT_NEAR(timed.irgnm().reserve_ms(), 0.25e-3, 1e-12);  // the first real overrun is kept
}

// What a real-clock deadline keeps back: never less than 8% of the deadline (the host's jitter at the end of
// a frame), the learned reserve when that is larger; what is learned and reported is unchanged by the floor.
TEST(Nlinv, TheDeadlineKeepsAFloorForTheHostsJitter) {
  DeadlineReserve r;
  EXPECT_DOUBLE_EQ(r.kept_back(8.0), 0.64);
  EXPECT_EQ(r.ms(), 0.0);
  r.note_overrun(0.1, 8.0);
  EXPECT_DOUBLE_EQ(r.kept_back(8.0), 0.64);  // 0.1 learned, below the floor
  r.note_overrun(0.8, 8.0);
  EXPECT_DOUBLE_EQ(r.ms(), 0.9);
  EXPECT_DOUBLE_EQ(r.kept_back(8.0), 0.9);
  r.note_overrun(5.0, 8.0);
  EXPECT_DOUBLE_EQ(r.kept_back(8.0), 2.0);  // the cap, a quarter of the deadline
}

// The host path's coil covariance against a plain sum in double (and its conjugate symmetry).
TEST(Nlinv, TheCoilCovarianceIsThePlainSum) {
  constexpr int coils = 5;
  constexpr std::size_t points = 1003;
  const auto x = random_vector(coils * points, 31);
  const auto cov = coil_covariance(x.data(), coils, points);
  for (int a = 0; a < coils; ++a)
    for (int b = 0; b < coils; ++b) {
      std::complex<double> s{};
      for (std::size_t p = 0; p < points; ++p)
        s += std::conj(std::complex<double>(x[a * points + p])) * std::complex<double>(x[b * points + p]);
      EXPECT_LT(std::abs(cov[std::size_t(a) * coils + b] - s), 1e-9 * std::abs(s) + 1e-9) << a << " " << b;
    }
}
