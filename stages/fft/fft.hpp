// Batched 2D complex FFT of [batch][G][G] grids (x fastest), in place, unnormalized.
// Inverse: out[p] = sum_g in[g] exp(+2 pi i g p / G). Forward uses exp(-...).
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "fft/fft_params.hpp"
#include "noncart/nufft_kernel.hpp"
#include "stage/stage.hpp"

namespace radstream {

// Throws ConfigError unless the extents are [batch][G][G] (both engines' configure()).
void check_fft_grids(const Extents& input);
// A GPU FFT stage's process() start: checks both views and, when out is not in, copies in to out (on the
// stream) so that the transform runs in place on out. CUDA builds only.
void prepare_fft_in_place(View<const cfloat> in, View<cfloat> out, const Extents& ext, Context& ctx);

// Memory (StageSizes): the transform's work over the coils' grids at the gridding's oversampling os; the
// fused image tail's the same and the per-coil images and maps of the combination it folds in.
inline double fft_bytes(const StageSizes& s, double os) {
  return s.grid(os);
}
inline double fused_image_bytes(const StageSizes& s, double os) {
  return s.grid(os) + 2 * s.image() * s.coils;
}

std::unique_ptr<Stage> make_fft_cpu(const FftParams& p, FftDirection dir);
std::unique_ptr<Stage> make_fft_cuda(const FftParams& p, FftDirection dir);  // CUDA builds only
std::unique_ptr<Stage> make_fft_custom(FftDirection dir);                    // CUDA builds only
// Custom-engine inverse FFT + crop + deapodization + RSS: [coils][G][G] -> [N][N] (fused_image_cuda.cu).
std::unique_ptr<Stage> make_fused_image_cuda(const NufftKernel& kernel);  // CUDA builds only

}  // namespace radstream
