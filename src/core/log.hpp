// Logging: a thin layer over spdlog so that the rest of the code does not depend on its set-up.
#pragma once
#include <spdlog/spdlog.h>

#include <string>
#include <string_view>

namespace radstream::log {

// Sets the level of the default logger from a name (trace, debug, info, warn, error, off). Throws
// ConfigError.
void set_level(const std::string& name);

// Text that came from outside (a sender's message, a header's parse error) made safe for a log line or the
// viewer: printable ASCII only (control characters, escape sequences and other bytes become '?', line breaks
// a space), at most `cap` characters ("..." marks a cut). A peer can neither forge a status line nor drive
// the terminal.
std::string printable_line(std::string_view text, std::size_t cap = 200);

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
