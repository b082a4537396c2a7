// Coil combination: [coils][N][N] complex coil images -> [N][N] combined image, stored as complex with the
// magnitude in the real part (the imaginary part is 0); the sensitivity-weighted combination keeps the phase
// instead (the complex sum conj(S) x / sum |S|^2) when keep_phase is set (complex MRD images: a magnitude
// step follows it in the recipe).
#pragma once
#include <cmath>
#include <memory>
#include <string>

#include "core/enum_table.hpp"
#include "stage/stage.hpp"

namespace radstream {

enum class CoilCombineMethod { Rss, Sense };
inline constexpr EnumTable<CoilCombineMethod, 2> kCoilCombineMethods{
    "coil combination", {{{CoilCombineMethod::Rss, "rss"}, {CoilCombineMethod::Sense, "sense"}}}};
inline CoilCombineMethod parse_coil_combine(const std::string& name) {
  return kCoilCombineMethods.parse(name);
}
inline std::string to_string(CoilCombineMethod v) {
  return kCoilCombineMethods.name(v);
}

struct CoilCombineParams {
  CoilCombineMethod method = CoilCombineMethod::Rss;
  bool keep_phase = false;  // not a key: set from ReconParams::keep_phase (sense only)

  template <class V>
  void visit(V& v) {
    v.choice("coil_combine", method, kCoilCombineMethods,
             "coil combination (rss: root-sum-of-squares; sense: weighted by the coil maps, abs(sum conj(S) "
             "x) / sum abs(S)^2)");
  }
};

// [coils][N][N] -> [N][N], or [images][N][N] when the geometry holds several images (their coils combined
// image by image; the sensitivity-weighted combination takes one image's maps, so it refuses several);
// throws ConfigError for any other shape (both twins' configure()).
Extents combined_extents(const Geometry& g, const Extents& coil_images, CoilCombineMethod method);

// The sensitivity-weighted combination of one pixel (0 where the maps vanish).
inline float sense_combine_pixel(float num_re, float num_im, float den) {
  return den > 1e-12f ? std::sqrt(num_re * num_re + num_im * num_im) / den : 0.f;
}
// The same with its phase: sum conj(S) x / sum |S|^2 (0 where the maps vanish).
inline float sense_combine_scale(float den) {
  return den > 1e-12f ? 1.f / den : 0.f;
}

// Memory (StageSizes): the coil maps it weighs by (sense); the magnitude needs nothing of its own.
inline double coil_combine_bytes(const StageSizes& s) {
  return s.image() * s.coils;
}
inline double magnitude_bytes(const StageSizes&) {
  return 0;
}

std::unique_ptr<Stage> make_coil_combine_cpu(const CoilCombineParams& p);
std::unique_ptr<Stage> make_coil_combine_cuda(const CoilCombineParams& p);  // CUDA builds only

// "magnitude": [N][N] complex -> [N][N] with |x| in the real part (in place allowed), after a solver.
std::unique_ptr<Stage> make_magnitude_cpu();
std::unique_ptr<Stage> make_magnitude_cuda();  // CUDA builds only

}  // namespace radstream
