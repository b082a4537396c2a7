#include "stream/frame_scheduler.hpp"

#include <algorithm>

namespace radstream {

void FrameScheduler::reset(int window, int stride, bool skip_when_behind) {
  window_ = std::max(1, window);
  stride_ = std::max(1, stride);
  skip_ = skip_when_behind;
  next_end_ = std::uint64_t(window_);
}

void FrameScheduler::set_window(int window) {
  window_ = std::max(1, window);
  next_end_ = std::max(next_end_, std::uint64_t(window_));
}

std::optional<DueFrame> FrameScheduler::next(std::uint64_t count) {
  if (count < next_end_) return std::nullopt;
  DueFrame due;
  if (skip_ && count - next_end_ >= std::uint64_t(stride_)) {  // the newest due frame wins
    due.skipped = (count - next_end_) / std::uint64_t(stride_);
    next_end_ += due.skipped * std::uint64_t(stride_);
  }
  due.end = next_end_;
  return due;
}

}  // namespace radstream
