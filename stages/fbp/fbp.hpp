// Filtered backprojection (the Schiwietz seed: radial spokes are projections by the central slice theorem).
// Two stages, CPU and CUDA twins, then the usual coil combination:
// Each spoke's line comes from its trajectory: direction th_p, sample spacing dk_p and the offset kc_p of its
// middle sample from k = 0 (k_n = (n - S/2) dk_p + kc_p along th_p: shifted (gradient-delay corrected)
// spokes, spokes without a sample at k = 0 and any readout oversampling are handled).
//  1. fbp_project: per spoke and coil, the ramp-type filter H(|k_n|) dk_p (|k| raised to dk/4 at the centre:
//  the
//     ramp's integral over the centre sample, as the ramp-dc density), zero-padded to P points (the smallest
//     power of two >= 2S), and the 1D inverse FFT: the filtered projection at t = (m - P/2) / (P dk_p)
//     pixels, up to the phase exp(2 pi i kc_p t). Input [coils][spokes][S] -> output [coils][spokes][P].
//  2. backproject: every pixel (x, y) (x, y = i - N/2) sums, over the spokes, w_p q_p(t) exp(2 pi i kc_p t),
//     t = x cos th_p + y sin th_p, with linear interpolation; w_p is the spoke's share of angle (half the
//     gaps to its neighbours, angles mod pi: right for linear 180/360 and golden-angle sets). The GPU version
//     gathers per pixel (no atomics). Output [coils][N][N].
// With the Ram-Lak filter this is the same sum as the gridding path's adjoint with ramp weights (without the
// grid), so the images agree up to interpolation.
#pragma once
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/enum_table.hpp"
#include "core/math.hpp"
#include "fft/fft_params.hpp"
#include "noncart/radial_geometry.hpp"
#include "stage/stage.hpp"

namespace radstream {

enum class FbpFilter { RamLak, SheppLogan, Hann };
inline constexpr EnumTable<FbpFilter, 3> kFbpFilters{
    "FBP filter",
    {{{FbpFilter::RamLak, "ram-lak"}, {FbpFilter::SheppLogan, "shepp-logan"}, {FbpFilter::Hann, "hann"}}}};
inline FbpFilter parse_fbp_filter(const std::string& name) {
  return kFbpFilters.parse(name);
}
inline std::string to_string(FbpFilter v) {
  return kFbpFilters.name(v);
}

struct FbpParams {
  FbpFilter filter = FbpFilter::RamLak;
  double cutoff = 1.0;  // of the Nyquist frequency (0.5 cycles/pixel); above it the filter is 0

  template <class V>
  void visit(V& v) {
    v.choice("fbp_filter", filter, kFbpFilters, "FBP filter");
    v.field("fbp_cutoff", cutoff, 0.05, 1.0, "FBP filter cut-off, fraction of Nyquist");
  }
};

int fbp_fft_size(int samples);  // smallest power of two >= 2 x samples

// The filter at |k| (cycles/pixel) times dk: ramp |k| (at least dk/4), windowed, zero beyond the cut-off.
RADSTREAM_HD inline float fbp_filter_value(int filter, float cutoff, float k, float dk) {
  const float a = fabsf(k), kc = 0.5f * cutoff;
  if (a > kc * (1.f + 1e-6f)) return 0.f;
  float v = fmaxf(a, 0.25f * dk);
  if (filter == 1) {  // Shepp-Logan: sinc
    const float x = kPiF * k / (2.f * kc);
    v *= x == 0.f ? 1.f : sinf(x) / x;
  } else if (filter == 2) {  // Hann
    v *= 0.5f * (1.f + cosf(kPiF * k / kc));
  }
  return v * dk;
}

// Memory (StageSizes): the filtered projections of every coil's spokes and their FFT work; the backprojection
// the per-coil images it writes.
inline double fbp_project_bytes(const StageSizes& s) {
  return 2 * s.samples_all();
}
inline double backproject_bytes(const StageSizes& s) {
  return s.image() * s.coils;
}

std::unique_ptr<Stage> make_fbp_project_cpu(const FbpParams& p, const FftParams& fft);
std::unique_ptr<Stage> make_backproject_cpu(const FbpParams& p);
std::unique_ptr<Stage> make_fbp_project_cuda(const FbpParams& p, const FftParams& fft);  // CUDA builds only
std::unique_ptr<Stage> make_backproject_cuda(const FbpParams& p);                        // CUDA builds only

}  // namespace radstream
