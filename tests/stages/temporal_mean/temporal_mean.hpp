// The example stage of docs/architecture.md ("Add a stage"): an exponential moving average over frames,
// out = alpha in + (1 - alpha) state, state = out. It keeps its own state buffer (StageSpec::state), zeroed
// at configure() and on a new stream, whatever other stage of the chain keeps its previous output. Its CPU
// and CUDA twins are this folder alone; the tests register them with one registry line and add them to a
// recipe with one line.
#pragma once
#include <memory>

#include "stage/stage.hpp"

namespace radstream {

std::unique_ptr<Stage> make_temporal_mean_cpu(float alpha);
std::unique_ptr<Stage> make_temporal_mean_cuda(float alpha);  // CUDA builds only

}  // namespace radstream
