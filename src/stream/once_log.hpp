// Logs a message the first time its kind occurs and only counts the later ones (bad input must not flood
// the log). Thread-safe: each kind is one atomic flag.
#pragma once
#include <array>
#include <atomic>
#include <string>

#include "core/log.hpp"

namespace radstream {

class OnceLog {
 public:
  static constexpr int kKinds = 16;
  void error(int kind, const std::string& what) {
    if (kind >= 0 && kind < kKinds && !logged_[std::size_t(kind)].exchange(true))
      log::error("run: {} (further ones are only counted)", what);
  }
  void warn(int kind, const std::string& what) {
    if (kind >= 0 && kind < kKinds && !logged_[std::size_t(kind)].exchange(true))
      log::warn("run: {} (further ones are only counted)", what);
  }

 private:
  std::array<std::atomic<bool>, kKinds> logged_{};
};

}  // namespace radstream
