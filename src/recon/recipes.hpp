// Recipes as data: what a reconstruction runs, as an ordered list of {stage key, named output buffer}. Every
// recipe of the program is built here, in one file; the chain executes one and exposes its named buffers
// ("coil_images", "image"). A step whose output has its input's name runs in place (the stage must allow it).
// The frame's data enter as the buffer "data".
#pragma once
#include <string>
#include <vector>

#include "recon/backend.hpp"

namespace radstream {

struct ReconParams;
class Registry;

struct RecipeStep {
  std::string stage;   // registry key (= the stage's name())
  std::string output;  // buffer it writes
};

struct Recipe {
  std::string name;
  std::vector<RecipeStep> steps;
  bool has_buffer(const std::string& b) const;
};

// The frame's reconstruction for these settings on this backend: the recipe the method declares
// (recon/methods.hpp), the method one of the registry's (or a built-in one). Throws ConfigError for a method
// the registry does not know or that is not a stage chain (the exact path).
Recipe recipe_for(const Registry& registry, const ReconParams& p, Backend backend);
Recipe recipe_for(const ReconParams& p, Backend backend);

// The built-in methods' chains (recon/methods.cpp says whose is which): gridding (density, gridding, inverse
// FFT, deapodize, coil combination; on the GPU with the custom engine and RSS, the fused tail), FBP, CG-SENSE
// and NLINV (each a solver stage and the magnitude).
Recipe gridding_recipe(const ReconParams& p, Backend backend);
Recipe fbp_recipe(const ReconParams& p, Backend backend);
Recipe cg_sense_recipe(const ReconParams& p, Backend backend);
Recipe nlinv_recipe(const ReconParams& p, Backend backend);

// Partial recipes on [coils][G][G] grids (input buffer "grid"), for the benchmark's FFT-engine case and its
// cuFFT yardstick: the inverse FFT alone, the forward FFT alone, the tail to the image (inverse FFT,
// deapodize, coil combination) and the fused tail.
enum class GridRecipe { InverseFft, ForwardFft, Tail, FusedTail };
Recipe grid_recipe(GridRecipe which);

}  // namespace radstream
