// What a deadline keeps back for what its predictions miss (a hiccup of the host or the GPU longer than any
// piece of work timed so far), learned from the frames that still overran: each overrun adds its own, at
// most a quarter of the deadline, and the reserve fades by 0.01% a frame (a half-life of about 2 minutes at
// 50 frames/s). NLINV's IRGNM and the CG-SENSE stage keep one each.
#pragma once
#include <algorithm>

namespace radstream {

class DeadlineReserve {
 public:
  void next_frame() { ms_ *= 0.9999; }
  // A frame that ended `overrun_ms` past its deadline of `deadline_ms` (nothing when <= 0).
  void note_overrun(double overrun_ms, double deadline_ms) {
    if (overrun_ms > 0) ms_ = std::min(ms_ + overrun_ms, 0.25 * deadline_ms);
  }
  void forget() { ms_ = 0; }
  double ms() const { return ms_; }

 private:
  double ms_ = 0;
};

}  // namespace radstream
