// Frame gaps: intervals between consecutive images longer than a threshold, each with its cause, so
// that a soak or a live session can say why the image stood still:
//  - input: the spokes that completed the frame arrived more than the threshold after the previous image (the
//    sender or the network paused, or the stream had ended);
//  - reconstruction: making the frame itself took more than half the threshold;
//  - scheduling: the spokes were there and the frame was quick to make, yet it came late (the thread waited
//    for a CPU, or a frame was skipped).
// The threshold is 100 ms or 1.5 x the stream's own frame interval, whichever is longer: the shortest
// interval between the arrivals of consecutive frames' last spokes over the last 16 frames (a stream at 10
// frames/s has no gaps for being at 10 frames/s; a sender's pause does not raise the threshold).
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace radstream {

class FrameGaps {
 public:
  enum Cause { Input, Reconstruction, Scheduling, kCauses };
  explicit FrameGaps(double threshold_ms = 100.0)
      : threshold_ms_(threshold_ms), effective_ms_(threshold_ms) {}
  // An image became ready at ready_ns; the last spoke of its window arrived at arrival_ns; making it took
  // make_ms. `since_ns`: the session's start (gap times are reported from it).
  void frame(std::int64_t ready_ns, std::int64_t arrival_ns, double make_ms, std::int64_t since_ns);

  std::uint64_t count() const;
  double max_ms() const;
  // {"threshold_ms" (the floor), "effective_threshold_ms", "count", "max_ms", "by_cause": {...}, "last":
  // [{"t_s", "gap_ms", "input_wait_ms", "make_ms", "cause"}, ...] (the last 100)}
  nlohmann::ordered_json to_json() const;
  static const char* name(Cause c);

 private:
  struct Gap {
    double t_s, gap_ms, input_wait_ms, make_ms;
    Cause cause;
  };
  double threshold_ms_;  // the floor (100 ms)
  double effective_ms_;  // the floor or 1.5 x the stream's frame interval
  std::int64_t prev_arrival_ns_ = 0;
  std::array<double, 16> intervals_ms_{};  // the last 16 arrival intervals (a ring; `intervals_` of them set)
  std::size_t intervals_ = 0;
  mutable std::mutex m_;
  std::int64_t prev_ready_ns_ = 0;
  std::uint64_t count_ = 0;
  double max_ms_ = 0;
  std::array<std::uint64_t, kCauses> by_cause_{};
  std::deque<Gap> last_;
};

}  // namespace radstream
