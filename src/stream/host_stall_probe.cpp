#include "stream/host_stall_probe.hpp"

#include <exception>

#include "core/clock.hpp"
#include "core/log.hpp"

namespace radstream {

namespace {
constexpr std::int64_t kPeriodNs = 1'000'000;
constexpr std::int64_t kLateNs = 1'000'000;
constexpr std::size_t kKept = 100'000;
}  // namespace

HostStallProbe::HostStallProbe() {
  stalls_.reserve(kKept);
  thread_ = std::thread([this] { run(); });
}

HostStallProbe::~HostStallProbe() {
  stop();
}

void HostStallProbe::stop() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void HostStallProbe::run() noexcept {
  try {
    std::int64_t due = monotonic_ns();
    for (;;) {
      due += kPeriodNs;
      sleep_until_ns(due);
      const std::int64_t now = monotonic_ns();
      std::lock_guard lock(m_);
      if (stop_) return;
      ++wakeups_;
      if (now - due > kLateNs && stalls_.size() < kKept) stalls_.push_back({due, now - due});
      if (now - due > kPeriodNs) due = now;  // after a stall, due times start again from now
    }
  } catch (const std::exception& e) {
    log::error("bench: the host stall probe stopped: {}", e.what());
  }
}

std::vector<HostStall> HostStallProbe::stalls() const {
  std::lock_guard lock(m_);
  return stalls_;
}

std::uint64_t HostStallProbe::wakeups() const {
  std::lock_guard lock(m_);
  return wakeups_;
}

int misses_in_stalls(const std::vector<DeadlineMiss>& misses, const std::vector<HostStall>& stalls) {
  int n = 0;
  for (const DeadlineMiss& m : misses) {
    const std::int64_t begin = m.end_ns - std::int64_t(m.solve_ms * 1e6);
    for (const HostStall& s : stalls)
      if (s.due_ns <= m.end_ns && s.due_ns + s.late_ns >= begin) {
        ++n;
        break;
      }
  }
  return n;
}

}  // namespace radstream
