#include "linalg/finite_difference.hpp"
#include "noncart/sense_operator_cuda.hpp"
#include "stages/cg_sense/cg_sense_stage.hpp"

namespace radstream {

std::unique_ptr<Stage> make_cg_sense_cuda(const CgSenseParams& p, const NufftKernel& kernel) {
  return std::make_unique<CgSenseStage<SenseOperatorCuda>>(
      p, Location::Device,
      [p, kernel](int N, int coils, std::size_t points, Context& ctx) {
        return std::make_unique<SenseOperatorCuda>(N, coils, points, kernel, p.toeplitz, ctx.stream);
      },
      [](Context& ctx) { return make_vector_ops_cuda(ctx.stream); },
      [](int N, Context& ctx) -> std::unique_ptr<LinearOperator> {
        return std::make_unique<FiniteDifferenceCuda>(N, ctx.stream);
      },
      [p, kernel](int N, int coils, std::size_t points, const CoilSplitOptions& o) {
        return make_coil_split_sense_cuda(N, coils, points, kernel, o, cg_sense_split_gpus(p));
      });
}

}  // namespace radstream
