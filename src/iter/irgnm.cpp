#include "iter/irgnm.hpp"

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/device_memory.hpp"

namespace radstream {

namespace {
// The data residual's |y - F(x)|^2, in a scalar slot the CG leaves alone.
constexpr int kRes = ConjugateGradient::kFirstFreeSlot;
// A deadline checked on the device keeps its scalars from here (DeviceDeadline).
constexpr int kDeadline = kRes + 1;
static_assert(kDeadline + DeviceDeadline::kCount < VectorOps::kSlots);  // the last slot is NLINV's scale
}  // namespace

struct Irgnm::Vectors {
  Vector r_data, b;
  Vectors(std::size_t n, std::size_t m, Location loc) : r_data(m, loc), b(n, loc) {}
};

namespace {
std::unique_ptr<VectorOps> checked(std::unique_ptr<VectorOps> ops, const NonlinearOperator& op) {
  if (!ops || ops->location() != op.location())
    throw ConfigError("irgnm: the vector operations must be given, at the operator's location");
  return ops;
}
}  // namespace

Irgnm::Irgnm(NonlinearOperator& op, std::unique_ptr<VectorOps> ops)
    : op_(op),
      ops_(checked(std::move(ops), op)),
      v_(std::make_unique<Vectors>(op.domain_size(), op.codomain_size(), op.location())),
      cg_(op.domain_size(), *ops_, false),  // no regularizer: no workspace for one
      normal_([this](const cfloat* v, cfloat* out) { op_.normal(v, out); }),
      run_ahead_(op.location() == Location::Device),
      device_loops_(ops_->device_loops() && op.stream() != nullptr) {}

Irgnm::~Irgnm() = default;

void Irgnm::set_clock(std::function<double()> elapsed_ms) {
  deadline_.set_clock(std::move(elapsed_ms));
}

int Irgnm::cg(double alpha, int max_iter, const CgStop& stop, const cfloat* b, cfloat* x, double t_setup,
              int& spent) {
  VectorOps& o = *ops_;
  CgOptions co;
  co.max_iterations = max_iter;
  co.lambda = alpha;   // (F'^H W F' + alpha I) h = b from h = 0,
  co.add_to_x = true;  // each iteration's step added to x itself: x + h without a vector for h
  cg_.begin(normal_, b, x, co, false);
  const double bb = cg_.rhs_norm2();  // waits for the Newton step's set-up too: its time is its own
  if (deadline_.active()) {
    t_last_ = deadline_.now_ms();
    deadline_.note(DeadlineStepper::Work::Setup, t_last_ - t_setup);
  }
  if (bb == 0 || max_iter <= 0) return 0;
  // The Newton step's CG rule (IrgnmParams::stop); an iteration enqueued after it holds is a no-op.
  const double limit = stop.limit(bb);
  co.converged_rr = limit;
  // Iteration i's |r|^2 is posted to host entry i mod kPosts.
  const auto enqueue = [&](int i) {
    cg_.step(normal_, x, co);
    o.post(cg_.rr_slot(i + 1), i % VectorOps::kPosts);
  };
  // The host looks at |r| one iteration late: while iteration i runs, i + 1 is already enqueued, so the GPU
  // never waits for the host between iterations. Running ahead is skipped when iteration i is expected to
  // converge (its |r|^2, predicted from the last ratio, within 4x the limit): an iteration enqueued after
  // convergence is spent (a whole iteration of GPU time), a wait costs only the host's turnaround (measured
  // on the host twin: 4x spent about half the iterations 1x did for a few more waits).
  int enqueued = 0, done = 0;
  double last = bb, ratio = 1;
  enqueue(enqueued++);
  // Under a deadline the CG does not run ahead: on the H200, N2 with running ahead (each run-ahead checked
  // against the deadline) missed 12 and 25 of 29,957 frames by ~0.8 ms, against 3 of 19,962 and 9 of 29,973
  // looking at every |r| before the next iteration; the frames gained 10% more iterations, not worth a miss.
  const bool ahead = run_ahead_ && !deadline_.active();
  while (done < enqueued) {
    if (ahead && enqueued == done + 1 && enqueued < max_iter && last * ratio > 4 * limit) enqueue(enqueued++);
    const double rs = o.fetch(done % VectorOps::kPosts);  // waits for iteration `done` only
    ++done;
    ratio = last > 0 ? rs / last : 0;
    last = rs;
    if (rs <= limit || !std::isfinite(rs)) {  // converged, or diverged past float's range: more cannot help
      spent += enqueued - done;
      break;
    }
    if (deadline_.active()) {  // (nothing in flight here)
      const double t = deadline_.now_ms();
      deadline_.note(DeadlineStepper::Work::Iteration, t - t_last_);
      t_last_ = t;
      if (!deadline_.fits(t, 0)) {  // the next iteration and the output
        stopped_early_ = true;
        break;
      }
    }
    if (enqueued == done && enqueued < max_iter) enqueue(enqueued++);
  }
  return done;
}

void Irgnm::set_device_loops(bool on) {
  device_loops_ = on && ops_->device_loops() && op_.stream() != nullptr;
  if (!device_loops_) frame_graph_.reset();
}

bool Irgnm::use_device_loops(const IrgnmParams& p) const {
  // (a test's driven clock is the host's: such a solve steps on the host)
  return device_loops_ && p.cg_max > 0 && p.newton_steps > 0 && !deadline_.clock_driven();
}

void Irgnm::enqueue_setup(double alpha, cfloat* x, const cfloat* x_ref, const cfloat* y) {
  VectorOps& o = *ops_;
  const std::size_t n = op_.domain_size(), m = op_.codomain_size();
  op_.linearize(x);
  op_.gradient(y, v_->r_data.data(), v_->b.data());  // r = y - W F(x), b = F'^H r
  o.dot_re(v_->r_data.data(), v_->r_data.data(), m, kRes);
  if (x_ref) o.axpy(v_->b.data(), float(alpha), x_ref, n);
  o.axpy(v_->b.data(), -float(alpha), x, n);
}

gpu::Graph Irgnm::capture_frame(const IrgnmParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y) {
  gpu::LoopGraphBuilder graph(op_.stream());
  const DeviceDeadline dl =
      p.deadline_ms > 0 ? DeviceDeadline{kDeadline, deadline_.margin()} : DeviceDeadline{};
  double alpha = 1.0;
  for (int step = 0; step < p.newton_steps; ++step) {
    // One Newton step: its set-up, then its CG (iteration 0 and the device loop of the rest).
    const auto newton_step = [&](gpu::LoopGraphBuilder& g) {
      g.add([&] {
        if (dl.active() && step == 0) ops_->deadline_start(dl);
        enqueue_setup(alpha, x, x_ref, y);
      });
      CgOptions co;
      co.max_iterations = p.cg_max;
      co.lambda = alpha;
      co.add_to_x = true;
      cg_.capture(g, normal_, v_->b.data(), x, co, p.stop, step == 0, dl);
    };
    if (dl.active() && step > 0) {  // a further Newton step only while it fits (decided on the device)
      const gpu::LoopHandle fits = graph.new_loop();
      graph.add([&] { ops_->deadline_gate(fits, dl); });
      graph.add_if(fits, newton_step);
    } else {
      newton_step(graph);
    }
    alpha = (alpha - p.alpha_min) / p.alpha_reduction + p.alpha_min;
  }
  graph.add([&] { op_.linearize(x); });
  return graph.finish();
}

IrgnmReport Irgnm::solve_in_graph(const IrgnmParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y,
                                  std::chrono::steady_clock::time_point start) {
  const GraphKey key{x,
                     x_ref,
                     y,
                     p.newton_steps,
                     p.cg_max,
                     p.alpha_min,
                     p.alpha_reduction,
                     p.stop.coef,
                     p.stop.power,
                     p.deadline_ms > 0};
  if (frame_graph_.empty() || !(key == graph_key_)) {
    frame_graph_.reset();
    frame_graph_ = capture_frame(p, x, x_ref, y);
    graph_key_ = key;
  }
  deadline_.begin_frame(p.deadline_ms, start);
  if (deadline_.active()) {  // what the work may take from now, and the slowest pieces so far
    // The device's clock starts at the graph's first kernel: the work enqueued before it (the frame's
    // gridding) is waited for here, so that the graph starts as the budget is reckoned.
    gpu::synchronize(op_.stream());
    const double handed[3] = {deadline_.budget_ms(deadline_.now_ms()),
                              deadline_.slowest(DeadlineStepper::Work::Iteration),
                              deadline_.slowest(DeadlineStepper::Work::Setup)};
    static_assert(DeviceDeadline::kBudget == 0 && DeviceDeadline::kIteration == 1 &&
                  DeviceDeadline::kSetup == 2);
    ops_->set_slots(kDeadline, handed, 3);
  }
  progress_.newton_step = 1;
  progress_.cg_iterations = 0;
  frame_graph_.launch(op_.stream());
  // The frame's one wait: the total of CG iterations, the residual, and the deadline's slots.
  constexpr int kFirst = ConjugateGradient::kTotalSlot;
  static_assert(kRes == kFirst + 1 && kDeadline == kRes + 1);
  double got[2 + DeviceDeadline::kCount] = {};
  ops_->read_slots(kFirst, got, deadline_.active() ? 2 + DeviceDeadline::kCount : 2);
  IrgnmReport rep;
  rep.cg_iterations = int(got[0]);
  rep.final_residual = std::sqrt(got[1]);
  rep.newton_steps = p.newton_steps;
  if (deadline_.active()) {
    const double* d = got + 2;
    deadline_.note(DeadlineStepper::Work::Iteration, d[DeviceDeadline::kIteration]);
    deadline_.note(DeadlineStepper::Work::Setup, d[DeviceDeadline::kSetup]);
    rep.newton_steps = int(d[DeviceDeadline::kSteps]);
    rep.stopped_early = d[DeviceDeadline::kStopped] != 0;
  }
  progress_.newton_step = rep.newton_steps;
  progress_.cg_iterations = rep.cg_iterations;
  tail_start_ = std::chrono::steady_clock::now();
  return rep;
}

IrgnmReport Irgnm::solve(const IrgnmParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y,
                         std::chrono::steady_clock::time_point start) {
  if (use_device_loops(p)) {
    try {
      return solve_in_graph(p, x, x_ref, y, start);
    } catch (const CudaError& e) {  // a driver without conditional graph nodes: the host steps instead
      log::warn("irgnm: the frame cannot run as one graph ({}); the host steps each CG from now on",
                e.what());
      frame_graph_.reset();
      device_loops_ = false;
    }
  }
  IrgnmReport rep;
  double alpha = 1.0;
  deadline_.begin_frame(p.deadline_ms, start);
  stopped_early_ = false;
  progress_.newton_step = 0;
  progress_.cg_iterations = 0;
  for (int step = 0; step < p.newton_steps; ++step) {
    progress_.newton_step = step + 1;
    if (deadline_.active() && step > 0) {  // a further Newton step needs its set-up and one CG iteration
      if (!deadline_.fits(deadline_.now_ms(), deadline_.slowest(DeadlineStepper::Work::Setup))) {
        stopped_early_ = true;
        break;
      }
    }
    const double t_setup = deadline_.active() ? deadline_.now_ms() : 0;
    enqueue_setup(alpha, x, x_ref, y);
    rep.cg_iterations += cg(alpha, p.cg_max, p.stop, v_->b.data(), x, t_setup, rep.cg_run_ahead_spent);
    progress_.cg_iterations = rep.cg_iterations;
    alpha = (alpha - p.alpha_min) / p.alpha_reduction + p.alpha_min;
    ++rep.newton_steps;
    if (stopped_early_) break;  // the best iterate reached: this step's partial solve applied
  }
  tail_start_ = std::chrono::steady_clock::now();
  rep.stopped_early = stopped_early_;
  rep.final_residual = std::sqrt(ops_->read(kRes));
  op_.linearize(x);  // the solution's point, for what the caller derives from it (NLINV: its coil images)
  return rep;
}

}  // namespace radstream
