// The coil split's partitions for either backend (coil_split_sense.hpp): Part is a backend's struct holding
// one partition's operator (op), vector operations (ops), reducer and buffers; this template runs them.
// Included by coil_split_sense_cpu.cpp and coil_split_sense_cuda.cu only.
#pragma once
#include <algorithm>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "linalg/reducer.hpp"
#include "noncart/coil_split_sense.hpp"

namespace radstream {

// E_p^H E_p x summed over the partitions: the normal operator CG sees (forward/adjoint are not split).
class ReducedNormal final : public LinearOperator {
 public:
  ReducedNormal(LinearOperator& part, Reducer& r)
      : LinearOperator(part.domain(), Extents{0}, part.location()), part_(part), r_(r) {}
  gpu::StreamRef stream() const override { return part_.stream(); }
  void forward(const cfloat*, cfloat*) override { throw ConfigError("coil split: only the normal operator is split"); }
  void adjoint(const cfloat*, cfloat*) override { throw ConfigError("coil split: only the normal operator is split"); }
  void normal(const cfloat* x, cfloat* z) override {
    part_.normal(x, z);
    r_.allreduce_sum(z, domain().size());
  }

 private:
  LinearOperator& part_;
  Reducer& r_;
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

// max over pixels of sum_c |S_c|^2 over all coils (the lambda scale).
inline double peak_map_power(const cfloat* maps, int coils, std::size_t pixels) {
  double peak = 0;
  for (std::size_t i = 0; i < pixels; ++i) {
    double s = 0;
    for (int c = 0; c < coils; ++c) s += std::norm(std::complex<double>(maps[std::size_t(c) * pixels + i]));
    peak = std::max(peak, s);
  }
  return peak;
}

// One CG solve on partition `part` (its thread): b = sum E_p^H y_p, then the iterations.
template <class Part>
CgReport solve_part(Part& part, const CoilSplitOptions& o, double peak_power, std::size_t pixels) {
  if (o.psf_per_solve) part.op->set_points(part.traj_ptr(), nullptr);
  part.op->adjoint(part.data_ptr(), part.b.data());
  part.reducer->allreduce_sum(part.b.data(), pixels);
  CgOptions cg;
  cg.max_iterations = o.iterations;
  cg.lambda = o.lambda * part.op->weight_sum() * peak_power;
  const bool warm = o.warm_start && part.solved;
  if (!warm) part.ops->zero(part.x.data(), pixels);
  ReducedNormal normal(*part.op, *part.reducer);
  part.cg->enqueue(normal, part.b.data(), part.x.data(), cg, warm);
  part.reducer->wait(o.timeout_s);
  CgReport r;
  r.iterations = o.iterations;
  r.residual = part.cg->residual();
  part.solved = true;
  return r;
}

// Runs fn(p) on one thread per partition; the first failure aborts the group and is rethrown here.
inline void run_parts(int parts, ReduceGroup& group, const std::function<void(int)>& fn) {
  std::mutex m;
  std::exception_ptr first;
  auto body = [&](int p) {
    try {
      fn(p);
    } catch (const std::exception& e) {
      {
        std::lock_guard lock(m);
        if (!first) first = std::current_exception();
      }
      group.abort("partition " + std::to_string(p) + " failed: " + e.what());
    } catch (...) {
      {
        std::lock_guard lock(m);
        if (!first) first = std::current_exception();
      }
      group.abort("partition " + std::to_string(p) + " failed");
    }
  };
  std::vector<std::thread> threads;
  for (int p = 1; p < parts; ++p) threads.emplace_back(body, p);
  body(0);
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace radstream
