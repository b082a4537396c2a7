// The NVIDIA kernel driver's release in the first line of /proc/driver/nvidia/version, for the bench JSON.
// Both module flavours put it after "Kernel Module", the open one after more words:
//   NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Thu ...
//   NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (...)  ...
// so the release is the first word after it made of digits and dots (with a dot); "unknown" when none is.
#pragma once
#include <sstream>
#include <string>

namespace radstream::app {

inline std::string driver_release_of(const std::string& version_line) {
  const auto k = version_line.find("Kernel Module");
  std::istringstream words(k == std::string::npos ? version_line : version_line.substr(k + 13));
  for (std::string w; words >> w;)
    if (w.find('.') != std::string::npos && w.find_first_not_of("0123456789.") == std::string::npos) return w;
  return "unknown";
}

}  // namespace radstream::app
