// A partial (asymmetric) echo: a readout of `samples` whose k = 0 is at `center_sample` instead of
// samples / 2, as scanners send to shorten the echo time. It is placed into the symmetric readout of `full`
// samples the stream declares (encodedSpace.matrixSize.x): sample n goes to n + full / 2 - center_sample, the
// samples not acquired are zero (they add nothing to the grid, and the density compensation of the acquired
// ones is that of their positions), and a trajectory that came with it is continued along the spoke at its
// own step. So gridding, the density and every iterative method see each sample at its true k.
#pragma once
#include <span>
#include <vector>

#include "core/buffer.hpp"

namespace radstream {

struct Readout {
  int samples = 0, center_sample = 0;
};

// Whether a readout of `r.samples` centred at `r.center_sample` is a partial echo that fits `full`: shorter,
// centred off its middle, and inside the symmetric readout once placed.
bool is_partial_echo(const Readout& r, int full);

// Places a partial echo (data [coils][r.samples], traj [r.samples][traj_dims], traj_dims 0 for none) into
// `data_out` [coils][full] and `traj_out` [full][traj_dims]; the vectors are resized (their capacity is kept
// from call to call). Throws InputError when it is not a partial echo of `full` (is_partial_echo).
void place_partial_echo(const Readout& r, int full, int coils, int traj_dims, std::span<const float> traj,
                        std::span<const cfloat> data, std::vector<float>& traj_out,
                        std::vector<cfloat>& data_out);

}  // namespace radstream
