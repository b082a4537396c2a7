#include "recon/memory_account.hpp"

#include <fmt/format.h>

namespace radstream {

namespace {

std::string gib(double bytes) {
  return bytes >= 1 << 30 ? fmt::format("{:.2f} GiB", bytes / double(1 << 30))
                          : fmt::format("{:.0f} MiB", bytes / double(1 << 20));
}

}  // namespace

void MemoryAccount::Hold::release() {
  if (auto a = account_.lock()) a->give_back(host_, device_);
  account_.reset();
  host_ = device_ = 0;
}

std::string MemoryAccount::reserve(Hold& hold, const MemoryNeed& need) {
  std::lock_guard lock(m_);
  const bool mine = hold.account_.lock().get() == this;
  const double host_others = host_ - (mine ? hold.host_ : 0);
  const double device_others = device_ - (mine ? hold.device_ : 0);
  const auto refuse = [&](const char* what, double others, double want, double limit) {
    return fmt::format(
        "needs {} of {} memory ({}) while the other streams hold {}: all streams together may hold {} ({})",
        gib(want), what, need.describe(), gib(others), gib(limit), total_.source);
  };
  if (total_.host_bytes > 0 && host_others + need.host_bytes > total_.host_bytes)
    return refuse("host", host_others, need.host_bytes, total_.host_bytes);
  if (total_.device_bytes > 0 && device_others + need.device_bytes > total_.device_bytes)
    return refuse("GPU", device_others, need.device_bytes, total_.device_bytes);
  host_ = host_others + need.host_bytes;
  device_ = device_others + need.device_bytes;
  hold.account_ = weak_from_this();
  hold.host_ = need.host_bytes;
  hold.device_ = need.device_bytes;
  return "";
}

void MemoryAccount::give_back(double host, double device) {
  std::lock_guard lock(m_);
  host_ -= host;
  device_ -= device;
}

double MemoryAccount::held_host() const {
  std::lock_guard lock(m_);
  return host_;
}

double MemoryAccount::held_device() const {
  std::lock_guard lock(m_);
  return device_;
}

}  // namespace radstream
