#include "recon/recipes.hpp"

#include <algorithm>

#include "recon/recon_params.hpp"

namespace radstream {

bool Recipe::has_buffer(const std::string& b) const {
  return b == "data" || std::any_of(steps.begin(), steps.end(), [&](const RecipeStep& s) { return s.output == b; });
}

Recipe recipe_for(const ReconParams& p, Backend backend) {
  if (p.method == ReconMethod::CgSense) return {"cg-sense", {{"cg_sense", "solution"}, {"magnitude", "image"}}};
  if (p.method == ReconMethod::Fbp)
    return {"fbp", {{"fbp_project", "projections"}, {"backproject", "coil_images"}, {"coil_combine", "image"}}};
  const bool fused = backend == Backend::Cuda && p.fft.engine == FftEngine::Custom && p.fft.fused &&
                     p.combine.method == CoilCombineMethod::Rss;
  if (fused)
    return {"gridding-fused", {{"density", "weighted"}, {"gridding", "grid"}, {"fft_deapodize_combine", "image"}}};
  return {"gridding",
          {{"density", "weighted"},
           {"gridding", "grid"},
           {"fft", "grid"},
           {"deapodize", "coil_images"},
           {"coil_combine", "image"}}};
}

Recipe grid_recipe(GridRecipe which) {
  switch (which) {
    case GridRecipe::InverseFft:
      return {"inverse-fft", {{"fft", "grid"}}};
    case GridRecipe::ForwardFft:
      return {"forward-fft", {{"fft_forward", "grid"}}};
    case GridRecipe::Tail:
      return {"tail", {{"fft", "grid"}, {"deapodize", "coil_images"}, {"coil_combine", "image"}}};
    case GridRecipe::FusedTail:
      return {"fused-tail", {{"fft_deapodize_combine", "image"}}};
  }
  return {};
}

}  // namespace radstream
