// Batched 2D complex FFT of [batch][G][G] grids (x fastest), in place, unnormalized.
// Inverse: out[p] = sum_g in[g] exp(+2 pi i g p / G). Forward uses exp(-...).
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "fft/fftw_plan.hpp"
#include "gridding/gridding.hpp"
#include "pipeline/stage.hpp"

namespace radstream {

enum class FftEngine { Auto, Fftw, Cufft, Custom };
FftEngine parse_fft_engine(const std::string& name);  // auto|fftw|cufft|custom
std::string to_string(FftEngine e);


struct FftParams {
  FftEngine engine = FftEngine::Auto;        // auto: FFTW on the CPU, cuFFT on the GPU
  FftPlanner planner = FftPlanner::Measure;  // FFTW planning effort (in configure, once)
  bool fused = true;  // custom engine: one fused inverse FFT + crop + deapodize + RSS (no coil images kept)

  template <class V>
  void visit(V& v) {
    v.choice(
        "fft", engine, parse_fft_engine, [](FftEngine e) { return to_string(e); },
        "FFT engine: auto | fftw (CPU) | cufft | custom (GPU)");
    v.choice(
        "fftw_planner", planner, parse_fft_planner, [](FftPlanner p) { return to_string(p); },
        "FFTW planning effort: estimate | measure | patient");
    v.field("fft_fused", fused,
            "with fft: custom, fuse the inverse FFT, crop, deapodization and RSS into two kernels "
            "(false keeps the per-coil images)");
  }
};

// Throws ConfigError unless the extents are [batch][G][G] (both engines' configure()).
void check_fft_grids(const Extents& input);
// A GPU FFT stage's process() start: checks both views and, when out is not in, copies in to out (on the
// stream) so that the transform runs in place on out. CUDA builds only.
void prepare_fft_in_place(View<const cfloat> in, View<cfloat> out, const Extents& ext, Context& ctx);

std::unique_ptr<Stage> make_fft_cpu(const FftParams& p, FftDirection dir);
std::unique_ptr<Stage> make_fft_cuda(const FftParams& p, FftDirection dir);  // CUDA builds only
std::unique_ptr<Stage> make_fft_custom(FftDirection dir);                    // CUDA builds only
// Custom-engine inverse FFT + crop + deapodization + RSS: [coils][G][G] -> [N][N] (fused_image_cuda.cu).
std::unique_ptr<Stage> make_fused_image_cuda(const GriddingParams& kernel);  // CUDA builds only

}  // namespace radstream
