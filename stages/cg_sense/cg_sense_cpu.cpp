#include "cg_sense/cg_sense_stage.hpp"
#include "noncart/sense_operator_cpu.hpp"

namespace radstream {

std::unique_ptr<Stage> make_cg_sense_cpu(const CgSenseParams& p, const NufftKernel& kernel, FftPlanner planner) {
  return std::make_unique<CgSenseStage<SenseOperatorCpu>>(
      p, Location::Host,
      [p, kernel, planner](int N, int coils, std::size_t points, Context& ctx) {
        return std::make_unique<SenseOperatorCpu>(N, coils, points, kernel, p.toeplitz, ctx.threads, planner);
      },
      [](Context&) { return make_vector_ops_cpu(); });
}

}  // namespace radstream
