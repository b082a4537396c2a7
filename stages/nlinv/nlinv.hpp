// The NLINV stage (nlinv/nlinv_engine.hpp): the frame's spokes [coils][spokes][samples] in, the image
// rho * ||c|| (or rho) [N][N] out, complex (a "magnitude" stage follows for display). It keeps the stream's
// solution from frame to frame (warm start and temporal damping); a new stream (the chain's reset_state)
// starts it afresh: its one state value, zeroed by the chain, says whether a frame has been solved since.
#pragma once
#include <memory>

#include "fft/fftw_plan.hpp"
#include "nlinv/nlinv_params.hpp"
#include "stage/stage.hpp"

namespace radstream {

// Memory (StageSizes): the Newton and CG vectors of the image and the (virtual) coils on the model's
// grid_os x N grid, and the frame's gridding onto it (bounded as the coils' grids at the reconstruction's
// gridding oversampling os, with the GPU forward NUFFT's row pass).
inline double nlinv_bytes(const StageSizes& s, const NlinvParams& p, double os) {
  const double gn = s.side(p.grid_os);
  const double coils = p.virtual_coils > 0 && p.virtual_coils < s.coils ? p.virtual_coils : s.coils;
  const double head = s.matrix * s.side(os) * s.coils * StageSizes::kComplex;
  return 14 * gn * gn * coils * StageSizes::kComplex + 2 * s.grid(os) + head;
}

std::unique_ptr<Stage> make_nlinv_cpu(const NlinvParams& p, FftPlanner planner);
std::unique_ptr<Stage> make_nlinv_cuda(const NlinvParams& p);  // CUDA builds

}  // namespace radstream
