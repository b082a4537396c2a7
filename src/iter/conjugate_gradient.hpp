// Conjugate gradients on the normal equations (seed 001, Table 44.1 form), for any operator:
//   (A^H A + lambda I + mu R^H R) x = b,   b given (usually A^H y).
// "N iterations" means N updates of x, each costing one application of the normal operator (plus one of R^H R
// when a regularizer is set). The initial residual r0 = b - M x0 costs one more application when warm
// starting (x0 given); a cold start sets x0 = 0 and r0 = b. Iteration k (1..N):
//   q = M p;  alpha = <r,r> / <p,q>;  x += alpha p;  r -= alpha q;  beta = <r,r>_new / <r,r>;  p = r + beta
//   p.
// A zero denominator makes its coefficient 0 (so an exact solution stays put instead of dividing by zero:
// Table 44.1 as printed divides by zero on its first pass when started at the solution). The direction update
// is made at the start of the iteration that uses it.
// With tolerance > 0 the solver reads |r| after each iteration (one device synchronization per iteration)
// and stops when |r| <= tolerance |b|, also before the first iteration (a warm start from the solution costs
// 0 iterations). With tolerance = 0 it runs exactly max_iterations and never waits for the device until the
// end (the loop can be captured in one CUDA graph). All workspaces are allocated in the constructor.
#pragma once
#include <functional>
#include <memory>

#include "gpu/loop_graph.hpp"
#include "linalg/linear_operator.hpp"
#include "linalg/vector_ops.hpp"

namespace radstream {

struct CgOptions {
  int max_iterations = 10;
  double tolerance = 0.0;  // relative residual |r| / |b| at which to stop; 0 = always max_iterations
  double lambda = 0.0;     // Tikhonov weight (absolute: the caller scales it to the data)
  double mu = 0.0;         // weight of the regularizer operator R (when given)
  // A stopping rule the caller looks at on the host one iteration late (step by step, the next iteration
  // already enqueued): every step after the first is a no-op on the device once <r, r> <= converged_rr, so an
  // iteration enqueued after convergence changes nothing. Negative: every step steps.
  double converged_rr = -1.0;
  // A cold start that adds its solution to x instead of overwriting it (x is not zeroed; r0 = b): the
  // Gauss-Newton step x += h of NLINV without a vector for h and a pass to add it.
  bool add_to_x = false;
};

struct CgReport {
  int iterations = 0;
  double residual = 0.0;  // final |r| / |b| (0 when b = 0)
};

class ConjugateGradient {
 public:
  // The system's normal operator applied to a vector (x -> A^H A x), for a caller without a LinearOperator
  // (NLINV's Gauss-Newton normal DG^H D DG); the LinearOperator overloads apply normal_of.normal().
  using Normal = std::function<void(const cfloat*, cfloat*)>;

  // n: the unknowns (the operator's domain size); ops decides the location of the workspaces. regularized:
  // whether a solve may pass a regularizer R (its workspace, one more vector of n, is made only then; a solve
  // given one without it throws ConfigError).
  ConjugateGradient(std::size_t n, VectorOps& ops, bool regularized = true);

  // Solves for x (n values at ops' location). warm_start: x holds the first guess; else x is overwritten.
  // regularizer: optional R (domain n), applied through its normal() and weighted by options.mu.
  CgReport solve(LinearOperator& normal_of, const cfloat* b, cfloat* x, const CgOptions& options,
                 bool warm_start, LinearOperator* regularizer = nullptr);
  // Fixed-count mode without any host wait: enqueues exactly options.max_iterations iterations (tolerance
  // must be 0), so the whole solve can be captured in a CUDA graph; residual() reads the result afterwards.
  void enqueue(LinearOperator& normal_of, const cfloat* b, cfloat* x, const CgOptions& options,
               bool warm_start, LinearOperator* regularizer = nullptr);
  // |r| / |b| after the last enqueue() or step() (waits for the device).
  double residual();
  // Step by step (a frame-time budget decides when to stop): begin() enqueues the start, each step() one
  // iteration; iterations() counts them. Same arithmetic as enqueue(); tolerance is not used.
  void begin(LinearOperator& normal_of, const cfloat* b, cfloat* x, const CgOptions& options, bool warm_start,
             LinearOperator* regularizer = nullptr);
  void step(LinearOperator& normal_of, cfloat* x, const CgOptions& options,
            LinearOperator* regularizer = nullptr);
  int iterations() const { return last_iterations_; }
  // The same over a Normal (no regularizer; the domain is the caller's to match).
  void begin(const Normal& normal, const cfloat* b, cfloat* x, const CgOptions& options, bool warm_start);
  void step(const Normal& normal, cfloat* x, const CgOptions& options);
  // <b, b> of the last begin() (waits for the device).
  double rhs_norm2();
  // A cold-start solve over a Normal that stops itself on the device (VectorOps::device_loops()), added to
  // a graph being built: iteration 0, then a device loop of the later iterations until <r, r> <=
  // stop.limit(<b, b>) or options.max_iterations (>= 1) are done; the host never waits in between. What the
  // iterations do is what step() does. The iterations run are added to slot kTotalSlot (set to 0 first when
  // reset_total). The solve's vectors and `normal` must outlive the graph.
  // Under a deadline checked on the device the loop also ends when its next iteration would not fit.
  void capture(gpu::LoopGraphBuilder& graph, const Normal& normal, const cfloat* b, cfloat* x,
               const CgOptions& options, const CgStop& stop, bool reset_total,
               const DeviceDeadline& deadline = {});
  // The scalar slot (VectorOps) holding <r, r> after `iterations` steps of the solve begun last: a caller
  // posts it to read |r| late. Slots 0..5 are the solver's; a caller sharing the VectorOps keeps its own
  // scalars above them.
  int rr_slot(int iterations) const;
  static constexpr int kCountSlot = 4, kTotalSlot = 5;
  static constexpr int kFirstFreeSlot = 6;

 private:
  std::size_t n_;
  VectorOps& ops_;
  Vector r_, p_, q_, t_;
  int last_iterations_ = 0;
  int first_rr_ = 0;  // the slot of <r0, r0>: b's own from a cold start
  void start(const Normal& a, const cfloat* b, cfloat* x, const CgOptions& o, bool warm, LinearOperator* reg);
  void iterate(const Normal& a, cfloat* x, const CgOptions& o, int it, LinearOperator* reg);
  void check(LinearOperator& a, const CgOptions& o, LinearOperator* reg) const;
  void apply(const Normal& a, LinearOperator* reg, const CgOptions& o, const cfloat* in, cfloat* out);
  void apply_pq(const Normal& a, const CgOptions& o, LinearOperator* reg);  // q = M p, <p, q>
};

}  // namespace radstream
