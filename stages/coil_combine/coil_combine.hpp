// Coil combination: [coils][N][N] complex coil images -> [N][N] combined image, stored as complex with the
// magnitude in the real part (the imaginary part is 0).
#pragma once
#include <memory>
#include <string>

#include "core/enum_table.hpp"
#include "stage/stage.hpp"

namespace radstream {

enum class CoilCombineMethod { Rss };
inline constexpr EnumTable<CoilCombineMethod, 1> kCoilCombineMethods{
    "coil combination", {{{CoilCombineMethod::Rss, "rss"}}}};
inline CoilCombineMethod parse_coil_combine(const std::string& name) { return kCoilCombineMethods.parse(name); }
inline std::string to_string(CoilCombineMethod v) { return kCoilCombineMethods.name(v); }

struct CoilCombineParams {
  CoilCombineMethod method = CoilCombineMethod::Rss;

  template <class V>
  void visit(V& v) {
    v.choice(
        "coil_combine", method, kCoilCombineMethods,
        "coil combination (rss: root-sum-of-squares)");
  }
};

// [coils][N][N] -> [N][N]; throws ConfigError for any other shape (both twins' configure()).
Extents combined_extents(const Extents& coil_images);

std::unique_ptr<Stage> make_coil_combine_cpu(const CoilCombineParams& p);
std::unique_ptr<Stage> make_coil_combine_cuda(const CoilCombineParams& p);  // CUDA builds only

}  // namespace radstream
