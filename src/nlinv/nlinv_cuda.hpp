// NLINV on the GPU (nlinv/nlinv_solver.hpp): NlinvModelCuda, and the frame gridded by NufftOperatorCuda on
// the model's G x G grid (kernel width 6), all on the caller's stream. The CG stopping rule waits for the
// stream once per CG iteration. CUDA builds only (make_nlinv_cuda_engine throws CudaError elsewhere).
#pragma once
#include <memory>

#include "gpu/handles.hpp"
#include "nlinv/nlinv_solver.hpp"

namespace radstream {

// traj [points][2], samples [coils][points] and out [N*N] of reconstruct() are device arrays.
std::unique_ptr<NlinvSolver> make_nlinv_cuda_engine(int matrix, int coils, std::size_t points,
                                                    const NlinvParams& p, gpu::StreamRef stream);

}  // namespace radstream
