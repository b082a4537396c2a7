#include "nlinv/nlinv_cuda.hpp"
#include "stages/nlinv/nlinv_stage.hpp"

namespace radstream {

std::unique_ptr<Stage> make_nlinv_cuda(const NlinvParams& p) {
  return std::make_unique<NlinvStage>(Location::Device,
                                      [p](int n, int coils, std::size_t points, Context& ctx) {
                                        return make_nlinv_cuda_engine(n, coils, points, p, ctx.stream);
                                      });
}

}  // namespace radstream
