// The tests' example method (docs/architecture.md, "Add a method"): the gridding chain with the example stage
// behind it, each frame averaged with the earlier ones (out = in / 2 + state / 2). Its stage's registry line
// (the stage's memory: its state, one image) and its one declaration are all it takes: `recon.method:
// gridding-averaged` then names it in a config, a stream runs it and the memory budget counts its stage.
#pragma once
#include "recon/methods.hpp"
#include "recon/recipes.hpp"
#include "recon/registry.hpp"
#include "tests/stages/temporal_mean/temporal_mean.hpp"

namespace radstream::test {

inline constexpr const char* kExampleMethod = "gridding-averaged";

inline void add_example_method(Registry& reg) {
  reg.add_twins(
      "temporal_mean", [](const ReconParams&) { return make_temporal_mean_cpu(0.5f); },
      RADSTREAM_CUDA_TWIN([](const ReconParams&) { return make_temporal_mean_cuda(0.5f); }),
      [](const StageSizes& s, const ReconParams&) { return s.image(); });
  MethodSpec example;
  example.name = kExampleMethod;
  example.keys = reg.method(ReconMethod::Gridding).keys;
  example.recipe = [](const ReconParams& p, Backend b) {
    Recipe r = gridding_recipe(p, b);
    r.name = kExampleMethod;
    r.steps.push_back({"temporal_mean", "averaged"});
    return r;
  };
  reg.add_method(example);
}

}  // namespace radstream::test
