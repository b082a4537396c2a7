// The coil split's partitions for either backend (coil_split_sense.hpp): Part is a backend's struct holding
// one partition's operator (op), vector operations (ops), reducer and buffers; this template runs them.
// Included by coil_split_sense_cpu.cpp and coil_split_sense_cuda.cu only.
#pragma once
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/coil_map_power.hpp"
#include "core/error.hpp"
#include "linalg/reducer.hpp"
#include "noncart/coil_split_sense.hpp"

namespace radstream {

// E_p^H E_p x summed over the partitions: the normal operator CG sees (forward/adjoint are not split). Op is
// a backend's SENSE operator: each partition forms its coils' sum in double (normal_sum), the partitions'
// sums are added in double and rounded to float once (round_sum), so the result does not depend on how the
// coils were split (up to a double rounding that reaches float's last bit about once in 10^8 values).
template <class Op>
class ReducedNormal final : public LinearOperator {
 public:
  ReducedNormal(Op& part, Reducer& r, std::complex<double>* sum)
      : LinearOperator(part.domain(), Extents{0}, part.location()), part_(part), r_(r), sum_(sum) {}
  gpu::StreamRef stream() const override { return part_.stream(); }
  void forward(const cfloat*, cfloat*) override {
    throw ConfigError("coil split: only the normal operator is split");
  }
  void adjoint(const cfloat*, cfloat*) override {
    throw ConfigError("coil split: only the normal operator is split");
  }
  void normal(const cfloat* x, cfloat* z) override {
    part_.normal_sum(x, sum_);
    r_.allreduce_sum(sum_, domain().size());
    part_.round_sum(sum_, z);
  }

 private:
  Op& part_;
  Reducer& r_;
  std::complex<double>* sum_;
};

inline std::pair<int, int> split_coils(int coils, int parts, int p) {
  return {int(long(coils) * p / parts), int(long(coils) * (p + 1) / parts)};
}

inline void check_split(int matrix, int coils, std::size_t points, int parts) {
  if (matrix < 2) throw ConfigError("coil split: matrix " + std::to_string(matrix) + " must be >= 2");
  if (points == 0) throw ConfigError("coil split: a frame of 0 samples");
  if (parts < 1 || parts > coils)
    throw ConfigError("coil split: " + std::to_string(parts) + " partitions for " + std::to_string(coils) +
                      " coils (need 1..coils)");
}

// One CG solve on partition `part` (its thread): b = sum E_p^H y_p, then the iterations.
template <class Part>
CgReport solve_part(Part& part, const CoilSplitOptions& o, double peak_power, std::size_t pixels) {
  if (o.psf_per_solve) part.op->set_points(part.traj_ptr(), nullptr);
  part.op->adjoint_sum(part.data_ptr(), part.sum_ptr());
  part.reducer->allreduce_sum(part.sum_ptr(), pixels);
  part.op->round_sum(part.sum_ptr(), part.b.data());
  CgOptions cg;
  cg.max_iterations = o.iterations;
  cg.lambda = o.lambda * part.op->weight_sum() * peak_power;
  const bool warm = o.warm_start && part.solved;
  if (!warm) part.ops->zero(part.x.data(), pixels);
  ReducedNormal normal(*part.op, *part.reducer, part.sum_ptr());
  part.cg->enqueue(normal, part.b.data(), part.x.data(), cg, warm);
  part.reducer->wait(o.timeout_s);
  CgReport r;
  r.iterations = o.iterations;
  r.residual = part.cg->residual();
  part.solved = true;
  return r;
}

// One thread per partition, made once (a solve costs no thread creation), and the split's watchdog: run()
// hands fn(p) to every partition's thread and waits at most timeout_s for all of them; past that it aborts
// the reduce group (an NCCL communicator stuck waiting for a partner is aborted, which releases the
// partitions blocked in it), waits for the threads to come back, and throws. The first partition failure is
// rethrown (the others, aborted because of it, are not).
class PartThreads {
 public:
  PartThreads(int parts, ReduceGroup& group) : group_(group) {
    for (int p = 0; p < parts; ++p) threads_.emplace_back([this, p] { loop(p); });
  }
  ~PartThreads() {
    {
      std::lock_guard lock(m_);
      quit_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }
  PartThreads(const PartThreads&) = delete;
  PartThreads& operator=(const PartThreads&) = delete;

  void run(const std::function<void(int)>& fn, double timeout_s) {
    std::unique_lock lock(m_);
    fn_ = &fn;
    first_ = nullptr;
    done_ = 0;
    ++generation_;
    cv_.notify_all();
    const auto all_done = [&] { return done_ == int(threads_.size()); };
    if (!done_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), all_done)) {
      lock.unlock();
      group_.abort("the partitions did not finish within " + std::to_string(timeout_s) +
                   " s (a stalled reduction; the group was aborted)");
      lock.lock();
      done_cv_.wait(lock, all_done);
      if (!first_)
        first_ =
            std::make_exception_ptr(Error("coil split: stalled for more than " + std::to_string(timeout_s) +
                                          " s; the reduce group was aborted"));
    }
    fn_ = nullptr;
    if (first_) std::rethrow_exception(first_);
  }

 private:
  void loop(int p) {
    std::uint64_t seen = 0;
    for (;;) {
      const std::function<void(int)>* fn = nullptr;
      {
        std::unique_lock lock(m_);
        cv_.wait(lock, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
        fn = fn_;
      }
      std::exception_ptr error;
      std::string what;
      try {
        (*fn)(p);
      } catch (const std::exception& e) {
        error = std::current_exception();
        what = e.what();
      } catch (...) {
        error = std::current_exception();
        what = "unknown error";
      }
      if (error) {
        bool mine = false;
        {
          std::lock_guard lock(m_);
          if (!first_) first_ = error, mine = true;
        }
        if (mine) group_.abort("partition " + std::to_string(p) + " failed: " + what);
      }
      {
        std::lock_guard lock(m_);
        ++done_;
      }
      done_cv_.notify_all();
    }
  }

  ReduceGroup& group_;
  std::vector<std::thread> threads_;
  std::mutex m_;  // guards everything below
  std::condition_variable cv_, done_cv_;
  const std::function<void(int)>* fn_ = nullptr;
  std::uint64_t generation_ = 0;
  int done_ = 0;
  bool quit_ = false;
  std::exception_ptr first_;
};

}  // namespace radstream
