// Logging: a thin layer over spdlog so that the rest of the code does not depend on its set-up.
#pragma once
#include <spdlog/spdlog.h>

#include <string>

namespace radstream::log {

// Sets the level of the default logger from a name (trace, debug, info, warn, error, off). Throws
// ConfigError.
void set_level(const std::string& name);

template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  spdlog::info(f, std::forward<Args>(args)...);
}
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  spdlog::warn(f, std::forward<Args>(args)...);
}
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  spdlog::error(f, std::forward<Args>(args)...);
}
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  spdlog::debug(f, std::forward<Args>(args)...);
}

}  // namespace radstream::log
