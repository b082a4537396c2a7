// Timing of a sequence of registered CUDA stages on random device data, outside a ReconChain: what the
// benchmark uses for the reference batched cuFFT of a case's oversampled grids and for R3 (FFT engines and
// chain tails on [coils][G][G]).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/geometry.hpp"
#include "recon/recipes.hpp"
#include "recon/recon_params.hpp"
#include "recon/registry.hpp"

namespace radstream::app {

struct Stats {
  double median = 0, p10 = 0, p90 = 0, p99 = 0;
};
Stats stats(std::vector<double> v);
nlohmann::ordered_json json_stats(const Stats& s);  // {"median", "p10", "p90", "p99"}

// Runs a grid recipe (recon/recipes.hpp: its input buffer is "grid", `input` extents of random complex
// data) warmup + frames times on one stream; returns the CUDA-event time of the whole sequence.
Stats time_cuda_recipe(const Recipe& recipe, const ReconParams& p, const Registry& registry,
                       const Geometry& g, const Extents& input, int frames, int warmup);

}  // namespace radstream::app
