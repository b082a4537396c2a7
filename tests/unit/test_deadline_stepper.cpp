// The one deadline stepper of CG-SENSE and NLINV (iter/deadline_stepper.hpp) under a driven clock: what fits,
// what each policy keeps from frame to frame, the reserve learned from overruns and the floor on a real
// clock.
#include <gtest/gtest.h>

#include "iter/deadline_stepper.hpp"

using namespace radstream;
using Work = DeadlineStepper::Work;

TEST(DeadlineStepper, TheCgSensePolicyTimesItsIterationsWithinTheFrame) {
  DeadlineStepper d({1.0, 0.0, false});
  double now = 0;
  d.set_clock([&] { return now; });
  d.begin_frame(5.0, {});
  EXPECT_TRUE(d.fits(4.9, 0)) << "nothing timed yet";
  d.note(Work::Iteration, 1.0);
  d.note(Work::Iteration, 0.5);
  EXPECT_DOUBLE_EQ(d.slowest(Work::Iteration), 1.0);
  EXPECT_TRUE(d.fits(4.0, 0));   // 4 + 1 <= 5
  EXPECT_FALSE(d.fits(4.1, 0));  // 5.1 > 5
  d.note_overrun(0.5);           // the frame ended 0.5 ms late: kept back from the next frames
  d.begin_frame(5.0, {});
  EXPECT_DOUBLE_EQ(d.slowest(Work::Iteration), 0.0) << "a new frame times its own iterations";
  EXPECT_NEAR(d.reserve_ms(), 0.5 * 0.9999, 1e-12);
  d.note(Work::Iteration, 1.0);
  EXPECT_TRUE(d.fits(3.5, 0));
  EXPECT_FALSE(d.fits(3.6, 0));  // 3.6 + 1 + 0.49995 > 5
  EXPECT_TRUE(DeadlineStepper({}).fits(1e9, 1e9)) << "no deadline: everything fits";
}

TEST(DeadlineStepper, TheNlinvPolicyKeepsItsTimingsAndReservesTheTailWithAMargin) {
  DeadlineStepper d({1.5, 0.98, true});
  d.set_clock([] { return 0.0; });
  d.begin_frame(8.0, {});
  d.note(Work::Iteration, 0.25);
  d.note(Work::Setup, 1.0);
  // The output after the work: at least one iteration.
  EXPECT_TRUE(d.fits(6.125, 1.0));  // 6.125 + 1.5 * (1 + 0.25) = 8
  EXPECT_FALSE(d.fits(6.126, 1.0));
  d.note(Work::Tail, 0.5);         // a tail slower than an iteration is reserved instead
  EXPECT_TRUE(d.fits(5.75, 1.0));  // 5.75 + 1.5 * 1.5 = 8
  EXPECT_FALSE(d.fits(5.76, 1.0));
  d.begin_frame(8.0, {});
  EXPECT_DOUBLE_EQ(d.slowest(Work::Setup), 0.98) << "kept from frame to frame, fading";
  EXPECT_DOUBLE_EQ(d.kept_back(), 0.0) << "a driven clock has no jitter: no floor";
}

TEST(DeadlineStepper, OnARealClockTheNlinvPolicyKeepsAFloorBack) {
  DeadlineStepper nlinv({1.5, 0.98, true}), cg({1.0, 0.0, false});
  nlinv.begin_frame(8.0, std::chrono::steady_clock::now());
  cg.begin_frame(8.0, std::chrono::steady_clock::now());
  EXPECT_DOUBLE_EQ(nlinv.kept_back(), DeadlineReserve::kFloorShare * 8.0);
  EXPECT_DOUBLE_EQ(cg.kept_back(), 0.0);
  nlinv.note_overrun(1.0);
  EXPECT_DOUBLE_EQ(nlinv.kept_back(), 1.0) << "the learned reserve once it is above the floor";
  nlinv.note_overrun(5.0);
  EXPECT_DOUBLE_EQ(nlinv.reserve_ms(), 2.0) << "at most a quarter of the deadline";
  const double t = nlinv.now_ms();
  EXPECT_GE(t, 0.0);
  EXPECT_LT(t, 1000.0);
}
