#include "recon/recipes.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "recon/methods.hpp"
#include "recon/recon_params.hpp"
#include "recon/registry.hpp"

namespace radstream {

bool Recipe::has_buffer(const std::string& b) const {
  return b == "data" ||
         std::any_of(steps.begin(), steps.end(), [&](const RecipeStep& s) { return s.output == b; });
}

namespace {
std::vector<RecipeStep> operator+(std::vector<RecipeStep> a, const std::vector<RecipeStep>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
// The coil combination into the image; for complex images (keep_phase) it keeps the phase in "solution" and a
// magnitude step makes the image.
std::vector<RecipeStep> combine_tail(bool keep_phase) {
  if (keep_phase) return {{"coil_combine", "solution"}, {"magnitude", "image"}};
  return {{"coil_combine", "image"}};
}
// The tail from a gridded k-space [coils][G][G] to the image, shared by gridding and the grid recipes.
std::vector<RecipeStep> image_tail(bool keep_phase = false) {
  return std::vector<RecipeStep>{{"fft", "grid"}, {"deapodize", "coil_images"}} + combine_tail(keep_phase);
}
// The density weighting and the gridding: two steps on the CPU; one on the GPU, where the spread applies the
// weights as it stages each sample instead of a pass that reads and writes every coil's samples.
std::vector<RecipeStep> grid_steps(Backend backend) {
  if (backend == Backend::Cuda) return {{"density_gridding", "grid"}};
  return {{"density", "weighted"}, {"gridding", "grid"}};
}
Recipe recipe_of(const MethodSpec& m, const ReconParams& p, Backend backend) {
  if (!m.recipe)
    throw ConfigError(std::string("method ") + m.name +
                      " is the exact path (exact/exact_recon.hpp), not a stage chain");
  return m.recipe(p, backend);
}
}  // namespace

Recipe recipe_for(const Registry& registry, const ReconParams& p, Backend backend) {
  return recipe_of(registry.method(p.method), p, backend);
}

Recipe recipe_for(const ReconParams& p, Backend backend) {
  return recipe_of(builtin_methods().at(p.method), p, backend);
}

Recipe nlinv_recipe(const ReconParams&, Backend) {
  return {"nlinv", {{"nlinv", "solution"}, {"magnitude", "image"}}};
}

Recipe cg_sense_recipe(const ReconParams&, Backend) {
  return {"cg-sense", {{"cg_sense", "solution"}, {"magnitude", "image"}}};
}

Recipe fbp_recipe(const ReconParams& p, Backend) {
  return {"fbp", std::vector<RecipeStep>{{"fbp_project", "projections"}, {"backproject", "coil_images"}} +
                     combine_tail(p.keep_phase)};
}

Recipe gridding_recipe(const ReconParams& p, Backend backend) {
  const bool fused = backend == Backend::Cuda && p.fft.engine == FftEngine::Custom && p.fft.fused &&
                     p.combine.method == CoilCombineMethod::Rss;
  if (fused)
    return {"gridding-fused",
            grid_steps(backend) + std::vector<RecipeStep>{{"fft_deapodize_combine", "image"}}};
  return {"gridding", grid_steps(backend) + image_tail(p.keep_phase)};
}

Recipe grid_recipe(GridRecipe which) {
  switch (which) {
    case GridRecipe::InverseFft:
      return {"inverse-fft", {{"fft", "grid"}}};
    case GridRecipe::ForwardFft:
      return {"forward-fft", {{"fft_forward", "grid"}}};
    case GridRecipe::Tail:
      return {"tail", image_tail()};
    case GridRecipe::FusedTail:
      return {"fused-tail", {{"fft_deapodize_combine", "image"}}};
  }
  return {};
}

}  // namespace radstream
