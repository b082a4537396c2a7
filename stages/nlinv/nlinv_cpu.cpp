#include "nlinv/nlinv_cpu.hpp"
#include "stages/nlinv/nlinv_stage.hpp"

namespace radstream {

std::unique_ptr<Stage> make_nlinv_cpu(const NlinvParams& p, FftPlanner planner) {
  return std::make_unique<NlinvStage>(
      Location::Host, [p, planner](int n, int coils, std::size_t points, Context& ctx) {
        return std::make_unique<NlinvCpu>(n, coils, points, p, ctx.threads, planner);
      });
}

}  // namespace radstream
