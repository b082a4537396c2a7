#include "io/asymmetric_echo.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace radstream {

bool is_partial_echo(const Readout& r, int full) {
  const int offset = full / 2 - r.center_sample;
  return r.samples > 1 && r.samples < full && r.center_sample != r.samples / 2 && offset >= 0 &&
         offset + r.samples <= full;
}

void place_partial_echo(const Readout& r, int full, int coils, int traj_dims, std::span<const float> traj,
                        std::span<const cfloat> data, std::vector<float>& traj_out,
                        std::vector<cfloat>& data_out) {
  if (!is_partial_echo(r, full))
    throw InputError(fmt::format("a readout of {} samples centred at {} is not a partial echo of {}",
                                 r.samples, r.center_sample, full));
  const int S = r.samples, D = traj_dims, offset = full / 2 - r.center_sample;
  if (data.size() != std::size_t(coils) * S || traj.size() != std::size_t(S) * D)
    throw InputError(
        fmt::format("a partial echo of {} samples x {} coils holds {} values and {} trajectory values", S,
                    coils, data.size(), traj.size()));
  data_out.assign(std::size_t(coils) * full, cfloat(0.f, 0.f));
  for (int c = 0; c < coils; ++c)
    std::copy_n(data.begin() + std::ptrdiff_t(c) * S, S,
                data_out.begin() + std::ptrdiff_t(c) * full + offset);
  traj_out.assign(std::size_t(full) * D, 0.f);
  for (int d = 0; d < D; ++d) {  // continued at the spoke's own step, from its first and last sample
    const double first = traj[std::size_t(d)], last = traj[std::size_t(S - 1) * D + d];
    const double step = (last - first) / double(S - 1);
    for (int j = 0; j < full; ++j)
      traj_out[std::size_t(j) * D + d] = j >= offset && j < offset + S ? traj[std::size_t(j - offset) * D + d]
                                                                       : float(first + (j - offset) * step);
  }
}

}  // namespace radstream
