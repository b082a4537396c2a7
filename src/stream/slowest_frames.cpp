#include "stream/slowest_frames.hpp"

#include <algorithm>

#include "stream/frame_result.hpp"

namespace radstream {

void SlowestFrames::frame(const FrameResult& f, std::int64_t since_ns) {
  if (f.last_arrival_ns <= 0 || f.ready_ns < f.last_arrival_ns) return;
  Entry e;
  e.t_s = double(f.ready_ns - since_ns) * 1e-9;
  e.total_ms = double(f.ready_ns - f.last_arrival_ns) * 1e-6;
  e.made_ms = f.make_ms;
  e.slice = f.slice;
  e.iterations = f.iterations;
  e.number = f.number;
  std::lock_guard lock(m_);
  keep(e);
}

void SlowestFrames::keep(const Entry& e) {
  if (n_ == kKept && e.total_ms <= kept_[kKept - 1].total_ms) return;
  if (n_ < kKept) ++n_;
  kept_[n_ - 1] = e;  // in place of the fastest kept (or a free place), then back into order
  std::sort(kept_.begin(), kept_.begin() + long(n_),
            [](const Entry& a, const Entry& b) { return a.total_ms > b.total_ms; });
}

void SlowestFrames::merge(const SlowestFrames& other) {
  if (&other == this) return;
  std::array<Entry, kKept> theirs;
  std::size_t n = 0;
  {
    std::lock_guard lock(other.m_);
    theirs = other.kept_;
    n = other.n_;
  }
  std::lock_guard lock(m_);
  for (std::size_t i = 0; i < n; ++i) keep(theirs[i]);
}

nlohmann::ordered_json SlowestFrames::to_json() const {
  std::lock_guard lock(m_);
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < n_; ++i) {
    const Entry& e = kept_[i];
    out.push_back({{"t_s", e.t_s},
                   {"slice", e.slice},
                   {"frame", e.number},
                   {"arrival_to_ready_ms", e.total_ms},
                   {"waited_ms", std::max(0.0, e.total_ms - e.made_ms)},
                   {"made_ms", e.made_ms},
                   {"iterations", e.iterations}});
  }
  return out;
}

}  // namespace radstream
