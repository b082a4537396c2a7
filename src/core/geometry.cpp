#include "core/geometry.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/frame.hpp"

namespace radstream {

void Geometry::validate() const {
  auto check = [](const char* key, long v, long lo, long hi) {
    if (v < lo || v > hi) throw ConfigError(fmt::format("{} = {} is outside {}..{}", key, v, lo, hi));
  };
  check("matrix", matrix, 8, 4096);
  check("samples", samples, 2, 65536);
  check("spokes", spokes, 1, 1 << 20);
  check("images", images, 1, 4096);
  if (coils % images != 0)
    throw ConfigError(fmt::format("coils = {} is not a multiple of images = {}", coils, images));
  check(images > 1 ? "coils per image" : "coils", coils / images, 1, 256);
  if (!(readout_os >= 1.f && readout_os <= 8.f))
    throw ConfigError(fmt::format("readout oversampling = {} is outside 1..8", readout_os));
}

std::string Geometry::str() const {
  if (images > 1)
    return fmt::format("{} spokes x {} samples x {} images x {} coils -> {} x {}^2", spokes, samples, images,
                       coils / images, images, matrix);
  return fmt::format("{} spokes x {} samples x {} coils -> {}^2", spokes, samples, coils, matrix);
}

void Frame::set_spoke(int s, const Spoke& spoke) {
  const Geometry& g = geometry;
  if (s < 0 || s >= g.spokes)
    throw InputError(fmt::format("spoke slot {} is outside 0..{}", s, g.spokes - 1));
  if (spoke.samples != g.samples || spoke.coils != g.coils)
    throw InputError(fmt::format("spoke {} has {} samples x {} coils, the frame expects {} x {}",
                                 spoke.header.spoke_index, spoke.samples, spoke.coils, g.samples, g.coils));
  if (spoke.traj.size() != 2u * g.samples || spoke.data.size() != std::size_t(g.coils) * g.samples)
    throw InputError(fmt::format("spoke {} buffers have the wrong size", spoke.header.spoke_index));
  std::copy(spoke.traj.begin(), spoke.traj.end(), traj.data() + std::size_t(s) * g.samples * 2);
  for (int c = 0; c < g.coils; ++c)
    std::copy(spoke.data.begin() + std::size_t(c) * g.samples,
              spoke.data.begin() + std::size_t(c + 1) * g.samples,
              data.data() + (std::size_t(c) * g.spokes + s) * g.samples);
  spoke_index[s] = spoke.header.spoke_index;
  if (partition.size() == spoke_index.size()) partition[s] = spoke.header.partition;
  last_acquired_ns = std::max(last_acquired_ns, spoke.header.acquired_ns);
}

}  // namespace radstream
