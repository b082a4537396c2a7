#include "core/log.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <map>
#include <mutex>

#include "core/error.hpp"

namespace radstream::log {
namespace {

// The listeners of warnings and errors (log.hpp), process-wide as the logger itself is.
struct Listeners {
  std::mutex m;
  std::map<std::uint64_t, Listener> fns;
  std::uint64_t next = 1;
};
Listeners& listeners() {
  static Listeners l;
  return l;
}

thread_local bool t_in_listener = false;  // a line logged by a listener is not handed back

class ListenerSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (msg.level < spdlog::level::warn || msg.level == spdlog::level::off || t_in_listener) return;
    const std::string_view line(msg.payload.data(), msg.payload.size());
    Listeners& l = listeners();
    std::lock_guard lock(l.m);
    if (l.fns.empty()) return;
    t_in_listener = true;
    for (auto& [id, f] : l.fns) {
      try {
        f(msg.level >= spdlog::level::err, line);
      } catch (...) {  // a listener's failure never reaches the code that logged
      }
    }
    t_in_listener = false;
  }
  void flush_() override {}
};

std::shared_ptr<ListenerSink> listener_sink() {
  static const auto s = std::make_shared<ListenerSink>();
  return s;
}

// The default logger of programs that keep spdlog's (the tests) gets the sink at static initialisation,
// before any thread runs.
[[maybe_unused]] const bool kSinkAdded = [] {
  spdlog::default_logger()->sinks().push_back(listener_sink());
  return true;
}();

}  // namespace

Subscription::Subscription(Listener f) {
  Listeners& l = listeners();
  std::lock_guard lock(l.m);
  id_ = l.next++;
  l.fns.emplace(id_, std::move(f));
}

Subscription::~Subscription() {
  Listeners& l = listeners();
  std::lock_guard lock(l.m);
  l.fns.erase(id_);
}

void install_default_logger() {
  auto logger = spdlog::stderr_color_mt("radstream");
  logger->sinks().push_back(listener_sink());
  spdlog::set_default_logger(logger);
}

void set_level(const std::string& name) {
  const auto level = spdlog::level::from_str(name);
  if (level == spdlog::level::off && name != "off") {
    throw ConfigError("log level '" + name + "' is not one of trace, debug, info, warn, error, off");
  }
  spdlog::set_level(level);
}

std::string printable_line(std::string_view text, std::size_t cap) {
  std::string out;
  out.reserve(std::min(text.size(), cap) + 3);
  for (char ch : text) {
    if (out.size() >= cap) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(ch);
    out += c == '\n' || c == '\r' || c == '\t' ? ' ' : (c >= 0x20 && c < 0x7f ? char(c) : '?');
  }
  return out;
}

}  // namespace radstream::log
