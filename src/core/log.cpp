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

}  // namespace radstream::log
