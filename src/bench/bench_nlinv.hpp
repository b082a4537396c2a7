// The NLINV cases' BART yardstick (N3): `bart rtnlinv` on the chain case's frame repeated as a time series,
// its wall time per frame, and how its last frame and radstream's agree.
#pragma once
#include <nlohmann/json.hpp>
#include <span>

#include "core/buffer.hpp"
#include "core/frame.hpp"
#include "nlinv/nlinv_params.hpp"

namespace radstream::app {

// `bart rtnlinv -i newton -t t k out` on `frames` copies of the frame (k-space along dimension 10; with
// virtual_coils the data are compressed first by `bart cc -p V -A`, untimed); median of 2 runs of the
// command, ms per frame, and the NRMSE (after a scalar fit) between BART's last frame and `ours` (the chain's
// image of the same frame after as many frames). Null when BART is not installed.
nlohmann::ordered_json bart_rtnlinv_reference(const Frame& f, const NlinvParams& p, int frames,
                                              std::span<const cfloat> ours);

// CUDA: one NLINV engine on the case's frame (as many frames as the case, warm): the median time of a frame,
// of one DG^H D DG application (what each CG iteration applies) and per Newton step and per CG iteration.
nlohmann::ordered_json nlinv_operator_times(const Frame& f, const NlinvParams& p, int frames, int warmup);

}  // namespace radstream::app
