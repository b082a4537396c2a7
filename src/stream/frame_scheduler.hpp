// Which frame to reconstruct next, as a pure function of the spokes received so far (no threads, no clock):
// a frame is the window of W spokes ending at a spoke count `end`; the first ends at W, the next S spokes
// later. When reconstruction falls behind, skip_when_behind makes the newest due frame win (the frames passed
// over are counted as skipped); otherwise every frame is made in order. Unit-tested on synthetic sequences.
#pragma once
#include <cstdint>
#include <optional>

namespace radstream {

struct DueFrame {
  std::uint64_t end = 0;      // the frame holds spokes [end - window, end) of the stream
  std::uint64_t skipped = 0;  // frames passed over to reach it
};

class FrameScheduler {
 public:
  // A new stream (or new framing): the first frame ends at `window`.
  void reset(int window, int stride, bool skip_when_behind);
  // The window changes mid-stream: the next frame still ends where it would have, but no earlier than the
  // new window (a larger window waits for its spokes).
  void set_window(int window);
  void set_stride(int stride) { stride_ = stride < 1 ? 1 : stride; }

  // With `count` spokes received: the frame to make now, or nothing when none is due.
  std::optional<DueFrame> next(std::uint64_t count);
  // The frame returned by next() was made (or failed): the following one ends `stride` later.
  void advance() { next_end_ += std::uint64_t(stride_); }
  // True when no frame is due with `count` spokes (everything due has been handed out): at a stream's
  // close, the run may stop once this holds.
  bool drained(std::uint64_t count) const { return count < next_end_; }

  int window() const { return window_; }
  int stride() const { return stride_; }
  std::uint64_t next_end() const { return next_end_; }

 private:
  int window_ = 1, stride_ = 1;
  bool skip_ = true;
  std::uint64_t next_end_ = 1;
};

}  // namespace radstream
