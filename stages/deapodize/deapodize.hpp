// Deapodization and crop: keeps the central N x N of the inverse-transformed oversampled grid, undoes the
// fftshift by the (-1)^(x+y) checkerboard, and divides by the kernel's Fourier transform, so that pixel (x,
// y) (x, y in -N/2 .. N/2-1, stored at x + N/2) equals the adjoint NUDFT sum_j d_j exp(+2 pi i k_j . (x, y)).
// Input [coils][G][G], output [coils][N][N].
#pragma once
#include <memory>
#include <vector>

#include "noncart/nufft_kernel.hpp"
#include "stage/stage.hpp"

namespace radstream {

// Per axis: for output pixel i (0..N-1) the source grid index and the factor (-1)^p / c_hat(p / G), p = i -
// N/2 (the NUFFT library's apodization, for the stage's kernel parameters).
using DeapodizeTable = AxisApodization;
DeapodizeTable make_deapodize_table(int matrix, const NufftKernel& kernel);

// Memory (StageSizes): the per-coil images it writes.
inline double deapodize_bytes(const StageSizes& s) {
  return s.image() * s.coils;
}

std::unique_ptr<Stage> make_deapodize_cpu(const NufftKernel& kernel);
std::unique_ptr<Stage> make_deapodize_cuda(const NufftKernel& kernel);  // CUDA builds only

}  // namespace radstream
