// How far each stage of a chain case is from its own floor (issue 31): the bytes the stage must at least move
// through device memory (the samples read, the oversampled grids written once, the images), over the
// bandwidth this device reaches on a large device-to-device copy measured in the same run. A stage whose
// work is not a memory stream (the tile sort, CG, NLINV) is left out.
#pragma once
#include <nlohmann/json.hpp>

#include "bench/bench_case.hpp"

namespace radstream::app {

// GB/s (1e9 bytes, read plus write) of a 512 MiB device-to-device copy on this GPU, median of 5; 0 when no
// GPU is usable.
double measured_copy_bandwidth_gb_s();

// {stage: {"bytes", "floor_ms", "x_floor"}} for the stages of stages_ms (the chain's JSON, medians) that have
// a memory-stream floor; grid: the oversampled grid's extent.
nlohmann::ordered_json stage_floors(const nlohmann::ordered_json& stages_ms, const BenchCase& c, int grid,
                                    double gb_per_s);

}  // namespace radstream::app
