// The FFT engine choice and its settings, shared by every stage that transforms (the FFT stage, FBP's
// projections): the engines themselves are this folder's libraries (FFTW, cuFFT, the custom GPU engine).
#pragma once
#include <string>

#include "core/enum_table.hpp"
#include "fft/fftw_plan.hpp"

namespace radstream {

enum class FftEngine { Auto, Fftw, Cufft, Custom };
inline constexpr EnumTable<FftEngine, 4> kFftEngines{"FFT engine",
                                                     {{{FftEngine::Auto, "auto"},
                                                       {FftEngine::Fftw, "fftw"},
                                                       {FftEngine::Cufft, "cufft"},
                                                       {FftEngine::Custom, "custom"}}}};
inline FftEngine parse_fft_engine(const std::string& name) {
  return kFftEngines.parse(name);
}
inline std::string to_string(FftEngine v) {
  return kFftEngines.name(v);
}

struct FftParams {
  FftEngine engine = FftEngine::Auto;        // auto: FFTW on the CPU, cuFFT on the GPU
  FftPlanner planner = FftPlanner::Measure;  // FFTW planning effort (in configure, once)
  bool fused = true;  // custom engine: one fused inverse FFT + crop + deapodize + RSS (no coil images kept)

  template <class V>
  void visit(V& v) {
    v.choice("fft", engine, kFftEngines, "FFT engine (fftw: CPU; cufft, custom: GPU)");
    v.choice("fftw_planner", planner, kFftPlanners, "FFTW planning effort");
    v.field("fft_fused", fused,
            "with fft: custom, fuse the inverse FFT, crop, deapodization and RSS into two kernels "
            "(false keeps the per-coil images)");
  }
};

}  // namespace radstream
