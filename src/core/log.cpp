#include "core/log.hpp"

#include "core/error.hpp"

namespace radstream::log {

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
