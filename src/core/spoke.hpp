// One radial readout: the MRD acquisition header fields the pipeline uses, its angle, trajectory and data.
#pragma once
#include <cstdint>
#include <vector>

#include "core/buffer.hpp"

namespace radstream {

inline constexpr int kMaxSlices = 16;  // slices (idx.slice 0..15) one pipeline reconstructs at most

struct SpokeHeader {
  std::uint32_t scan_counter = 0;
  std::uint64_t spoke_index = 0;             // idx.kspace_encode_step_1 (and the envelope's spoke index)
  std::uint64_t flags = 0;                   // MRD acquisition flags
  std::uint32_t acquisition_time_stamp = 0;  // MRD ticks
  std::int64_t acquired_ns = 0;              // CLOCK_MONOTONIC ns at acquisition
  std::int64_t sent_ns = 0;                  // CLOCK_MONOTONIC ns when sent
  double angle = 0.0;                        // radians; NaN when unknown
  std::uint16_t slice = 0;                   // idx.slice: which slice (plane) of a multi-slice stream
  // idx.kspace_encode_step_2: the kz partition of a stack of stars (kz = partition - partitions / 2); 0 in a
  // 2D stream. Its spoke_index is then the in-plane spoke, shared by every partition at that angle.
  std::uint16_t partition = 0;
};

struct Spoke {
  SpokeHeader header;
  int samples = 0;
  int coils = 0;
  std::vector<float> traj;   // [samples][2], cycles/pixel
  std::vector<cfloat> data;  // [coils][samples]
};

}  // namespace radstream
