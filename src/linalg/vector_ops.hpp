// Vector operations for solvers, on the host or on the device. Reductions land in scalar slots that live
// where the vectors live (device memory on the GPU), and the solver's updates read their coefficients from
// those slots, so a fixed number of CG iterations never waits for the host and can be captured in one CUDA
// graph. read(), read2() and fetch() are the only calls that wait.
#pragma once
#include <cstddef>
#include <memory>

#include "core/buffer.hpp"
#include "gpu/handles.hpp"
#include "gpu/loop_graph.hpp"

namespace radstream {

// Where a CG running in a device loop keeps its scalars: <r, r> of the newest and the one before (cur,
// prev), <b, b>, the iterations of this solve and a running total over solves.
struct CgLoopSlots {
  int cur, prev, bb, count, total;
};
// A CG's stopping rule as a device loop applies it: stop once <r, r> <= coef <b, b>^power (power 1: a
// relative residual, coef = tolerance^2; power 2: BART's legacy rule for NLINV, ||r|| <= (0.1 ||b||)^2).
struct CgStop {
  double coef = 0;
  int power = 1;  // 1 or 2
  // (the device loop's control kernel computes the same in vector_ops_cuda.cu)
  double limit(double bb) const { return power == 2 ? coef * bb * bb : coef * bb; }
};

// A frame deadline checked on the device, inside a graph of device loops (iter/irgnm.hpp): its scalars in
// the slots from `base`. The host's deadline stepper (iter/deadline_stepper.hpp) hands over the budget (the
// ms the GPU work may take from its first kernel, with the output after it and what is kept back already
// taken off) and its slowest CG iteration and Newton step set-up so far (ms); the device times its own, keeps
// the slowest, and stops a loop (or skips a Newton step) whose next piece, times `margin`, would end past the
// budget. The host reads back the slowest times, whether the deadline stopped the solve and the Newton steps
// begun.
struct DeviceDeadline {
  enum Slot { kBudget, kIteration, kSetup, kStart, kLast, kStepStart, kStopped, kSteps, kCount };
  int base = -1;  // < 0: no deadline
  double margin = 1.0;
  bool active() const { return base >= 0; }
};

class VectorOps {
 public:
  static constexpr int kSlots = 16;
  virtual ~VectorOps() = default;
  virtual Location location() const = 0;

  virtual void copy(cfloat* dst, const cfloat* src, std::size_t n) = 0;
  virtual void zero(cfloat* x, std::size_t n) = 0;
  // x = v everywhere.
  virtual void fill(cfloat* x, std::size_t n, cfloat v) = 0;
  // x = a x (a: a host constant).
  virtual void scale(cfloat* x, std::size_t n, float a) = 0;
  // host [n] <- src [n] (at location()); waits for the work enqueued before it.
  virtual void to_host(cfloat* host, const cfloat* src, std::size_t n) = 0;
  // y = y + a x (a: a host constant).
  virtual void axpy(cfloat* y, float a, const cfloat* x, std::size_t n) = 0;
  // y = x - y.
  virtual void rsub(cfloat* y, const cfloat* x, std::size_t n) = 0;
  // slot = Re <x, y> = Re sum conj(x_i) y_i, accumulated in double.
  virtual void dot_re(const cfloat* x, const cfloat* y, std::size_t n, int slot) = 0;
  // CG direction: beta = s[rr_new] / s[rr_old] (0 when s[rr_old] <= 0); p = r + beta p.
  virtual void cg_direction(cfloat* p, const cfloat* r, std::size_t n, int rr_new, int rr_old) = 0;
  // Fused passes (each vector read once instead of twice; the same values as the separate calls):
  // a CG's cold start: r = p = b and slot = Re <b, b>.
  virtual void cg_start(cfloat* r, cfloat* p, const cfloat* b, std::size_t n, int slot) = 0;
  // y += a x, then slot = Re <x, y>.
  virtual void axpy_dot(cfloat* y, float a, const cfloat* x, std::size_t n, int slot) = 0;
  // The CG step, alpha = s[rr] / s[pq] (0 when s[pq] <= 0), x += alpha p, r -= alpha q, then s[rr_new] =
  // Re <r, r> of the updated r, in one pass. The step is skipped (alpha = 0) while s[rr] <=
  // limit: a solver that looks at |r| one iteration late makes the iteration it enqueued after convergence a
  // no-op.
  virtual void cg_step_norm(cfloat* x, cfloat* r, const cfloat* p, const cfloat* q, std::size_t n, int rr,
                            int pq, int rr_new, double limit) = 0;
  // Posting: the slot's value, once the work enqueued before it is done, is copied to host entry `entry`
  // (0..kPosts-1) without waiting; fetch(entry) waits for that copy only, not for work enqueued after it.
  static constexpr int kPosts = 4;
  virtual void post(int slot, int entry) = 0;
  virtual double fetch(int entry) = 0;
  // The value of a slot (waits for the work enqueued before it).
  virtual double read(int slot) = 0;
  // Two slots with one wait (a per-frame report needs both).
  virtual void read2(int a, int b, double& va, double& vb) = 0;
  // Whether the operations can run inside a device loop (gpu/loop_graph.hpp): the CUDA ones.
  virtual bool device_loops() const { return false; }
  // A CG's loop control after an iteration (one tiny kernel, inside a device loop's capture). first (after
  // iteration 0, whose <r, r> is in cur): s[prev] = s[bb], s[count] = 1, s[total] += 1 (reset to 0 first
  // when reset_total). Later (the iteration's step wrote the new <r, r> into prev): cur and prev swap, so cur
  // holds the newest; count and total grow by one. Then the loop goes on while count < max_iterations and
  // the newest <r, r> is finite and above stop.limit(s[bb]). Throws ConfigError where device_loops() is
  // false.
  // With a deadline the control also times the iteration (first: the Newton step's set-up and iteration 0)
  // and ends the loop when the next iteration would not fit (DeviceDeadline).
  virtual void cg_loop_control(gpu::LoopHandle loop, const CgLoopSlots& slots, const CgStop& stop,
                               int max_iterations, bool first, bool reset_total,
                               const DeviceDeadline& deadline = {});
  // The frame's first kernel under a device deadline: its start, no stop yet, one Newton step begun.
  virtual void deadline_start(const DeviceDeadline& deadline);
  // Before a further Newton step: sets `branch` to whether the step (its set-up and first iteration, timed
  // as the slowest so far) still fits and the deadline has not stopped the solve already.
  virtual void deadline_gate(gpu::LoopHandle branch, const DeviceDeadline& deadline);
  // Slots [first, first + count) set from the host / read (waits for the work enqueued before).
  virtual void set_slots(int first, const double* values, int count) = 0;
  virtual void read_slots(int first, double* values, int count) = 0;
};

std::unique_ptr<VectorOps> make_vector_ops_cpu();
// stream: the cudaStream_t the operations are enqueued on. CUDA builds only (else throws CudaError).
std::unique_ptr<VectorOps> make_vector_ops_cuda(gpu::StreamRef stream);

}  // namespace radstream
