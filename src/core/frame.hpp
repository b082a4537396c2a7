// A frame: a window of spokes packed for reconstruction, data [coils][spokes][samples] and trajectory
// [spokes][samples][2] in cycles/pixel, with the indices and timestamps of the spokes it holds.
#pragma once
#include <cstdint>
#include <vector>

#include "core/buffer.hpp"
#include "core/geometry.hpp"
#include "core/spoke.hpp"

namespace radstream {

struct Frame {
  Geometry geometry;
  HostBuffer<cfloat> data;  // [coils][spokes][samples]
  HostBuffer<float> traj;   // [spokes][samples][2]
  std::vector<std::uint64_t> spoke_index;
  std::vector<std::uint16_t> partition;  // each slot's kz partition (a stack of stars; 0 in a 2D stream)
  std::int64_t last_acquired_ns = 0;
  std::int64_t last_arrival_ns = 0;

  Frame() = default;
  explicit Frame(const Geometry& g)
      : geometry(g),
        data(Extents{std::size_t(g.coils), std::size_t(g.spokes), std::size_t(g.samples)}),
        traj(Extents{std::size_t(g.spokes), std::size_t(g.samples), 2}),
        spoke_index(g.spokes),
        partition(g.spokes) {}

  // Copies one spoke into slot s of the frame. Throws InputError if its sizes disagree with the geometry.
  void set_spoke(int s, const Spoke& spoke);
};

}  // namespace radstream
