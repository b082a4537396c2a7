// The latest-frame mailbox: the newest frame wins (a viewer never waits for the pipeline, the pipeline never
// waits for a viewer). Its lock guards the slot and the count and nothing else.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "stream/frame_result.hpp"

namespace radstream {

class LatestFrame {
 public:
  void put(std::shared_ptr<const FrameResult> f) {
    {
      std::lock_guard lock(m_);
      latest_ = std::move(f);
      ++count_;
    }
    cv_.notify_all();
  }
  std::shared_ptr<const FrameResult> get() const {
    std::lock_guard lock(m_);
    return latest_;
  }
  // True once at least n frames were put (false on timeout).
  bool wait_count(std::uint64_t n, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(m_);
    return cv_.wait_for(lock, timeout, [&] { return count_ >= n; });
  }

 private:
  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  std::shared_ptr<const FrameResult> latest_;
  std::uint64_t count_ = 0;
};

}  // namespace radstream
