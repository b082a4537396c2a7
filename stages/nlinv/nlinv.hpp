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

std::unique_ptr<Stage> make_nlinv_cpu(const NlinvParams& p, FftPlanner planner);
std::unique_ptr<Stage> make_nlinv_cuda(const NlinvParams& p);  // CUDA builds

}  // namespace radstream
