// What a deadline keeps back for what its predictions miss (a hiccup of the host or the GPU longer than any
// piece of work timed so far), learned from the frames that still overran: each overrun adds its own, at
// most a quarter of the deadline, and the reserve fades by 0.01% a frame (a half-life of about 2 minutes at
// 50 frames/s). NLINV's IRGNM and the CG-SENSE stage keep one each in their iter/deadline_stepper; the IRGNM
// keeps back at least a floor (kept_back), the CG-SENSE stage, whose R9 solves end well before their
// deadline, the learned part alone.
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
  // What was learned from the overruns.
  double ms() const { return ms_; }
  // What a deadline of `deadline_ms` keeps back on a real clock: the learned reserve, and never less than
  // kFloorShare of the deadline for the host's jitter at the frame's end (the worker's vCPU taken away while
  // the output is copied back), which no timing of the work sees coming. On an H200, NLINV's N2 (8 ms) with
  // the learned reserve alone missed 1 and 3 frames in two runs of ~30,000: outputs that took 0.11-0.32 ms
  // longer than predicted. 8 % (0.64 ms) is twice the largest; with it N2 missed none in 29,968 frames, for
  // about one CG iteration of N2's 28.
  static constexpr double kFloorShare = 0.08;
  double kept_back(double deadline_ms) const { return std::max(ms_, kFloorShare * deadline_ms); }

 private:
  double ms_ = 0;
};

}  // namespace radstream
