// The iteratively regularized Gauss-Newton method (IRGNM) over any NonlinearOperator
// (iter/nonlinear_operator.hpp), as BART's iter4_irgnm runs it for nlinv, on either backend (the operator's
// location; VectorOps at the same place): Newton steps n = 0..N-1, each solving
//   (F'^H W F' + alpha_n I) h = F'^H (y - W F(x_n)) + alpha_n (x_ref - x_n),   x_{n+1} = x_n + h
// by conjugate gradients (iter/conjugate_gradient.hpp) from h = 0 (at most cg_max iterations, stopped by
// BART's legacy rule ||r|| <= (0.1 ||b||)^2, the original Matlab nlinv's, or another IrgnmParams::stop), then
// alpha <- (alpha - alpha_min) / alpha_reduction + alpha_min, alpha_0 = 1. The stopping rule reads |r| on the
// host one iteration late (the next iteration is already enqueued, so the GPU does not wait for the host; one
// that turns out to follow convergence changes nothing), or, on a GPU, on the device inside one graph a
// frame (set_device_loops). Under a deadline one DeadlineStepper (iter/deadline_stepper.hpp) decides before
// each CG iteration and Newton step whether it still fits (on a GPU, from a check inside the graph). Every
// vector is made at construction: a frame allocates nothing.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "iter/conjugate_gradient.hpp"
#include "iter/deadline_stepper.hpp"
#include "iter/nonlinear_operator.hpp"
#include "linalg/vector_ops.hpp"

namespace radstream {

// BART's CG rule for NLINV (iter3's nlinv_legacy, which BART's nlinv and rtnlinv set; the original Matlab
// nlinv's): ||r|| <= (cgtol ||b||)^2 with cgtol 0.1, i.e. <r, r> <= 1e-4 <b, b>^2. It depends on the scale of
// b (BART's data are scaled to ||y|| = 100); BART's iter3 without nlinv_legacy stops at ||r|| <= 0.1 ||b||.
inline constexpr CgStop kNlinvLegacyStop{1e-4, 2};
inline constexpr CgStop kRelativeStop{1e-2, 1};

struct IrgnmParams {
  int newton_steps = 6;
  int cg_max = 100;                // CG iterations per Newton step at most
  CgStop stop = kNlinvLegacyStop;  // when a Newton step's CG stops
  double alpha_min = 0.0;
  double alpha_reduction = 2.0;
  double deadline_ms = 0;  // > 0: stop early at start + deadline_ms (the frame's clock)
};

struct IrgnmReport {
  int newton_steps = 0;
  int cg_iterations = 0;       // over all Newton steps
  int cg_run_ahead_spent = 0;  // iterations enqueued ahead of a CG that had converged (no-ops run on the GPU)
  double final_residual = 0;   // ||y - W F(x)|| before the last step
  bool stopped_early = false;  // the deadline ended the solve before its Newton steps were done
  double deadline_reserve_ms = 0;  // what the deadline keeps back, learned from the overruns up to this frame
};

class Irgnm {
 public:
  // op and ops at the same location; op outlives the solver.
  Irgnm(NonlinearOperator& op, std::unique_ptr<VectorOps> ops);
  ~Irgnm();
  // x [domain] is updated in place; x_ref may be null (zero); y [codomain]; all at the operator's location.
  // With p.deadline_ms > 0 the solve stops early, keeping the iterate reached, when the next CG iteration or
  // Newton step (timed as the slowest so far, with a margin) would end past `start` + deadline_ms.
  IrgnmReport solve(const IrgnmParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y,
                    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now());
  VectorOps& ops() { return *ops_; }
  // Where the solve in progress is, for a progress line on another thread: its Newton step (1-based; 0 before
  // the first) and the CG iterations of the frame so far.
  struct Progress {
    std::atomic<int> newton_step{0}, cg_iterations{0};
  };
  const Progress& progress() const { return progress_; }
  // Tests: the clock the deadline reads (ms since the solve's start); empty: the steady clock.
  void set_clock(std::function<double()> elapsed_ms);
  // A test's clock: the test also says what the tail cost and what overran (note_tail, note_overrun).
  bool clock_driven() const { return deadline_.clock_driven(); }
  // Whether CG enqueues its next iteration before looking at the last one's |r| (on the GPU by default, and
  // only without a deadline; on the host it gains nothing, and tests turn it on to check that it changes no
  // result).
  void set_run_ahead(bool on) { run_ahead_ = on; }
  // Whether a frame runs as one graph of device loops (on a GPU whose VectorOps have them; the default
  // there): each Newton step's CG stops itself on the device, so the host waits once a frame instead of at
  // every Newton step and near every CG's convergence; the arithmetic is the host-stepped path's. Under a
  // deadline the device also checks the clock before each further CG iteration and Newton step, with the
  // budget and the slowest times this solver's deadline stepper hands over (DeviceDeadline), so a frame
  // ends when the clock says so, not when the host next looks. Off: the host steps every CG (tests compare
  // the two).
  void set_device_loops(bool on);
  // Drops the slowest times kept for the deadline's predictions.
  void forget_timings() { deadline_.forget_timings(); }
  // The frame's tail after the iterations (the coil images of the solution, the output image, its copy back),
  // timed by the caller from tail_start(): the deadline then reserves the slowest tail so far instead of one
  // CG iteration (on the H200, N2's small misses overran by ~0.2 ms: the tail cost more than an iteration).
  void note_tail(double ms) { deadline_.note(DeadlineStepper::Work::Tail, ms); }
  // A frame that ended `ms` past its deadline: kept back from the next frames' deadlines
  // (core/deadline_reserve.hpp).
  void note_overrun(double ms) { deadline_.note_overrun(ms); }
  double reserve_ms() const { return deadline_.reserve_ms(); }
  void forget_reserve() { deadline_.forget_reserve(); }
  double slowest_tail_ms() const { return deadline_.slowest(DeadlineStepper::Work::Tail); }
  std::chrono::steady_clock::time_point tail_start() const { return tail_start_; }

 private:
  // The CG of one Newton step from h = 0, its iterates added to x as they come (x + h); t_setup: when the
  // step's set-up began (ms); spent counts the iterations run ahead of convergence.
  int cg(double alpha, int max_iter, const CgStop& stop, const cfloat* b, cfloat* x, double t_setup,
         int& spent);
  // The frame as one graph of device loops (set_device_loops), captured on the first frame and again when
  // the vectors or the parameters change.
  bool use_device_loops(const IrgnmParams& p) const;
  IrgnmReport solve_in_graph(const IrgnmParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y,
                             std::chrono::steady_clock::time_point start);
  // A Newton step's set-up: linearized at x, the data residual's norm, the right-hand side b.
  void enqueue_setup(double alpha, cfloat* x, const cfloat* x_ref, const cfloat* y);
  gpu::Graph capture_frame(const IrgnmParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y);
  struct GraphKey {
    const cfloat *x = nullptr, *x_ref = nullptr, *y = nullptr;
    int newton_steps = 0, cg_max = 0;
    double alpha_min = 0, alpha_reduction = 0, stop_coef = 0;
    int stop_power = 0;
    bool deadline = false;
    bool operator==(const GraphKey&) const = default;
  };
  gpu::Graph frame_graph_;
  GraphKey graph_key_;

  NonlinearOperator& op_;
  std::unique_ptr<VectorOps> ops_;
  struct Vectors;
  std::unique_ptr<Vectors> v_;
  ConjugateGradient cg_;  // the one CG of linalg, over the model's normal operator
  ConjugateGradient::Normal normal_;
  // The next piece of work (timed as the slowest of its kind so far, with a margin of half again) and the
  // output that follows it (the slowest tail so far, at least one CG iteration) must still fit, before the
  // reserve learned from the frames that overran (at least its floor for the host's jitter; under a test's
  // driven clock there is no jitter: the learned part alone). The slowest times are kept from frame to frame
  // (fading by 2% a frame): a frame's first checks then know what its work costs before it has timed any of
  // it.
  DeadlineStepper deadline_{{1.5, 0.98, true}};
  double t_last_ = 0;
  std::chrono::steady_clock::time_point tail_start_;
  bool stopped_early_ = false;
  bool run_ahead_;
  bool device_loops_;
  Progress progress_;
};

}  // namespace radstream
