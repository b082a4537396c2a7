// The slowest frames of a run (the arrival of its window's last spoke -> its image ready), each with where
// its time went, so that a tail (a p99.9 or a maximum far above the median) can be traced to its frames and
// their cause: `waited` is the time from the last spoke's arrival until the worker began the frame (the
// spokes were there; the worker was still making the frame before, or waited for a CPU), `made` the worker's
// own time (assembling the window and reconstructing it), `iterations` an iterative method's count for the
// frame. The ten slowest are kept, slowest first.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>

namespace radstream {

struct FrameResult;

class SlowestFrames {
 public:
  static constexpr std::size_t kKept = 10;
  // A frame was emitted; `since_ns`: the run's start (times are reported from it). Frames without an
  // arrival time are left out.
  void frame(const FrameResult& f, std::int64_t since_ns);
  // [{"t_s", "slice", "frame", "arrival_to_ready_ms", "waited_ms", "made_ms", "iterations"}, ...], slowest
  // first.
  nlohmann::ordered_json to_json() const;
  // Another run's slowest frames (a closed session's) among these (their times stay from their own start).
  void merge(const SlowestFrames& other);

 private:
  struct Entry {
    double t_s = 0, total_ms = 0, made_ms = 0;
    int slice = 0, iterations = -1;
    std::uint64_t number = 0;
  };
  mutable std::mutex m_;
  std::array<Entry, kKept> kept_{};
  std::size_t n_ = 0;
  void keep(const Entry& e);  // (m_ held)
};

}  // namespace radstream
