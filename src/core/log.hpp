// Logging: a thin layer over spdlog so that the rest of the code does not depend on its set-up.
#pragma once
#include <spdlog/spdlog.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace radstream::log {

// Warnings and errors are also handed to listeners while they are subscribed (the MRD server forwards the
// pipeline's to its clients as WRN/ERR texts). A listener runs on the thread that logged, under the
// listeners' lock: it must be quick and must not wait on anything that logs; a line it logs itself is not
// handed back to it.
using Listener = std::function<void(bool error, std::string_view line)>;
class Subscription {
 public:
  explicit Subscription(Listener f);
  ~Subscription();  // after it returns the listener is not called again
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

 private:
  std::uint64_t id_;
};

// The program's logger: stderr, coloured, "[time] [level] text", with the listeners' sink. Called by main
// before any thread starts (the default logger of a test program has the listeners' sink from the start).
void install_default_logger();

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
