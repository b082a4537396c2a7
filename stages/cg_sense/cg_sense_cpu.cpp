#include "cg_sense/cg_sense_stage.hpp"
#include "linalg/finite_difference.hpp"
#include "noncart/sense_operator_cpu.hpp"

namespace radstream {

std::unique_ptr<Stage> make_cg_sense_cpu(const CgSenseParams& p, const NufftKernel& kernel, FftPlanner planner) {
  return std::make_unique<CgSenseStage<SenseOperatorCpu>>(
      p, Location::Host,
      [p, kernel, planner](int N, int coils, std::size_t points, Context& ctx) {
        return std::make_unique<SenseOperatorCpu>(N, coils, points, kernel, p.toeplitz, ctx.threads, planner);
      },
      [](Context&) { return make_vector_ops_cpu(); },
      [](int N, Context&) -> std::unique_ptr<LinearOperator> { return std::make_unique<FiniteDifferenceCpu>(N); });
}

}  // namespace radstream
