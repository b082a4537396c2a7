// What a reconstruction worker reads: one stream's spoke rings (one per slice), its header and its
// generation (+1 for every new stream or geometry). The front door (stream/stream_intake.hpp) is the one
// implementation; the worker knows nothing of the protocol the spokes came by.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>

#include "core/stream_header.hpp"
#include "stream/spoke_ring.hpp"

namespace radstream {

class SpokeSource {
 public:
  struct State {
    std::shared_ptr<SpokeRing> ring;  // null until the first header
    StreamHeader header;
    std::uint64_t generation = 0;  // +1 per new stream or geometry change
  };
  virtual ~SpokeSource() = default;
  virtual State state(int slice) const = 0;
  // Waits until slice `slice`'s ring of `generation` holds at least `count` spokes, the generation changes,
  // the source stops, or the timeout passes.
  virtual void wait_for(std::uint64_t generation, std::uint64_t count, std::chrono::milliseconds timeout,
                        int slice) const = 0;
  virtual int slices() const = 0;
};

}  // namespace radstream
