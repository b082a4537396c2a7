#include "stream/frame_gaps.hpp"

#include <algorithm>

namespace radstream {

const char* FrameGaps::name(Cause c) {
  switch (c) {
    case Input:
      return "input";
    case Reconstruction:
      return "reconstruction";
    default:
      return "scheduling";
  }
}

void FrameGaps::frame(std::int64_t ready_ns, std::int64_t arrival_ns, double make_ms, std::int64_t since_ns) {
  std::lock_guard lock(m_);
  const std::int64_t prev = prev_ready_ns_;
  prev_ready_ns_ = ready_ns;
  if (prev_arrival_ns_ != 0 && arrival_ns > prev_arrival_ns_) {
    intervals_ms_[intervals_++ % intervals_ms_.size()] = double(arrival_ns - prev_arrival_ns_) * 1e-6;
    const double pace = *std::min_element(intervals_ms_.begin(),
                                          intervals_ms_.begin() + std::min(intervals_, intervals_ms_.size()));
    effective_ms_ = std::max(threshold_ms_, 1.5 * pace);
  }
  if (arrival_ns > prev_arrival_ns_) prev_arrival_ns_ = arrival_ns;
  if (prev == 0) return;  // the first image: no interval yet
  const double gap_ms = double(ready_ns - prev) * 1e-6;
  max_ms_ = std::max(max_ms_, gap_ms);
  if (gap_ms <= effective_ms_) return;
  Gap g;
  g.t_s = double(ready_ns - since_ns) * 1e-9;
  g.gap_ms = gap_ms;
  g.input_wait_ms = arrival_ns > prev ? double(arrival_ns - prev) * 1e-6 : 0.0;
  g.make_ms = make_ms;
  g.cause = g.input_wait_ms > effective_ms_ ? Input
            : make_ms > 0.5 * effective_ms_ ? Reconstruction
                                            : Scheduling;
  ++count_;
  ++by_cause_[g.cause];
  last_.push_back(g);
  if (last_.size() > 100) last_.pop_front();
}

std::uint64_t FrameGaps::count() const {
  std::lock_guard lock(m_);
  return count_;
}

double FrameGaps::max_ms() const {
  std::lock_guard lock(m_);
  return max_ms_;
}

nlohmann::ordered_json FrameGaps::to_json() const {
  std::lock_guard lock(m_);
  nlohmann::ordered_json j;
  j["threshold_ms"] = threshold_ms_;
  j["effective_threshold_ms"] = effective_ms_;
  j["count"] = count_;
  j["max_ms"] = max_ms_;
  for (int c = 0; c < kCauses; ++c) j["by_cause"][name(Cause(c))] = by_cause_[std::size_t(c)];
  j["last"] = nlohmann::ordered_json::array();
  for (const auto& g : last_)
    j["last"].push_back({{"t_s", g.t_s},
                         {"gap_ms", g.gap_ms},
                         {"input_wait_ms", g.input_wait_ms},
                         {"make_ms", g.make_ms},
                         {"cause", name(g.cause)}});
  return j;
}

}  // namespace radstream
