// One deadline stepper for every iterative solve under a frame deadline (CG-SENSE's CG, NLINV's IRGNM):
// before each further piece of work the solver asks whether it still fits, from the slowest time of that kind
// of work measured so far, a margin, the output that must follow it, and what is kept back for what the
// timing misses (core/deadline_reserve.hpp). A solve that is told no hands over the iterate it has reached.
//
// The clock is the frame's (ms since its start on the steady clock), or one a test drives. The methods differ
// only in their policy: CG-SENSE, whose R9 solves end far before their deadline, times its iterations within
// the frame and keeps back the learned reserve alone; NLINV, which spends the whole budget, keeps its timings
// from frame to frame (fading), adds half again to each prediction, reserves the slowest output tail, and
// keeps back at least a floor for the host's jitter on a real clock.
#pragma once
#include <algorithm>
#include <array>
#include <chrono>
#include <functional>

#include "core/deadline_reserve.hpp"

namespace radstream {

class DeadlineStepper {
 public:
  // The kinds of work a solve times: an iteration (a CG step), the set-up of an outer step (a Newton step's
  // linearization and right-hand side), the tail after the iterations (the output image and its copy back).
  enum class Work { Iteration, Setup, Tail };
  struct Policy {
    double margin = 1.0;  // each prediction times this
    double fade = 0.0;    // the slowest times carried into the next frame times this (0: per frame)
    bool floor = false;   // keep back at least DeadlineReserve::kFloorShare on a real clock
  };
  explicit DeadlineStepper(Policy p) : p_(p) {}

  // A new frame with `deadline_ms` (<= 0: none) from `start`.
  void begin_frame(double deadline_ms, std::chrono::steady_clock::time_point start) {
    deadline_ms_ = deadline_ms;
    start_ = start;
    for (double& s : slowest_) s *= p_.fade;
    reserve_.next_frame();
  }
  bool active() const { return deadline_ms_ > 0; }
  double deadline_ms() const { return deadline_ms_; }
  // Tests: the clock the deadline reads (ms since the frame's start); empty: the steady clock.
  void set_clock(std::function<double()> elapsed_ms) { clock_ = std::move(elapsed_ms); }
  bool clock_driven() const { return bool(clock_); }
  double now_ms() const {
    if (clock_) return clock_();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  // A piece of work of kind `w` took `ms`.
  void note(Work w, double ms) { slowest_[index(w)] = std::max(slowest_[index(w)], ms); }
  double slowest(Work w) const { return slowest_[index(w)]; }
  // Whether, at `t` ms, `next_ms` more of work and the output that follows it (the slowest tail so far, at
  // least one iteration) still end before the deadline less what is kept back. Always true without one.
  bool fits(double t, double next_ms) const {
    if (!active()) return true;
    return t + p_.margin * (next_ms + tail()) + kept_back() <= deadline_ms_;
  }
  // What the work from `t` on may still take when a check made on the device decides (DeviceDeadline):
  // `next` more fits while t' + margin() * next <= t + budget_ms(t), the output and what is kept back taken
  // off here as fits() takes them.
  double budget_ms(double t) const { return deadline_ms_ - t - p_.margin * tail() - kept_back(); }
  double margin() const { return p_.margin; }
  // What is kept back now: the learned reserve, and its floor on a real clock when the policy has one.
  double kept_back() const { return p_.floor && !clock_ ? reserve_.kept_back(deadline_ms_) : reserve_.ms(); }
  // The frame ended `ms` past its deadline (nothing when <= 0).
  void note_overrun(double ms) { reserve_.note_overrun(ms, deadline_ms_); }
  double reserve_ms() const { return reserve_.ms(); }
  void forget_reserve() { reserve_.forget(); }
  void forget_timings() {
    slowest_.fill(0);
    reserve_.forget();
  }

 private:
  double tail() const { return std::max(slowest(Work::Iteration), slowest(Work::Tail)); }
  static std::size_t index(Work w) { return std::size_t(w); }
  Policy p_;
  double deadline_ms_ = 0;
  std::chrono::steady_clock::time_point start_{};
  std::function<double()> clock_;
  std::array<double, 3> slowest_{};
  DeadlineReserve reserve_;
};

}  // namespace radstream
