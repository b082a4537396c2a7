#include "core/heartbeat.hpp"

#include "core/log.hpp"

namespace radstream {

Heartbeat::Heartbeat(std::string who, std::chrono::milliseconds every)
    : who_(std::move(who)), every_(every), thread_([this] { loop(); }) {}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Heartbeat::doing(std::string what, std::function<std::string()> detail) {
  std::lock_guard lock(m_);
  what_ = std::move(what);
  detail_ = std::move(detail);
  since_ = last_line_ = std::chrono::steady_clock::now();
}

void Heartbeat::idle() {
  std::lock_guard lock(m_);
  what_.clear();
  detail_ = {};
}

void Heartbeat::loop() {
  try {
    std::unique_lock lock(m_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (stop_ || what_.empty()) continue;
      const auto now = std::chrono::steady_clock::now();
      if (now - last_line_ < every_) continue;
      last_line_ = now;
      std::string detail;
      if (detail_) detail = detail_();
      const double s = std::chrono::duration<double>(now - since_).count();
      log::info("{}: still {} ({:.0f} s{}{})", who_, what_, s, detail.empty() ? "" : "; ", detail);
    }
  } catch (const std::exception& e) {
    log::error("{}: the progress line failed: {}", who_, e.what());
  }
}

}  // namespace radstream
