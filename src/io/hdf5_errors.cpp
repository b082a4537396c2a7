#include "io/hdf5_errors.hpp"

#include <hdf5.h>
#include <ismrmrd/ismrmrd.h>

#include <mutex>

namespace radstream {
namespace {

void silent(const char*, int, const char*, int, const char*) {}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '.' || s.back() == ' ' || s.back() == ')' || s.back() == '\n'))
    s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}

}  // namespace

void quiet_ismrmrd_errors() {
  static std::once_flag once;  // the library's handler is process-wide; set it once, never changed after
  std::call_once(once, [] { ISMRMRD::ismrmrd_set_error_handler(&silent); });
}

void hdf5_skip_exit_cleanup() {
  H5dont_atexit();
}

std::string short_hdf5_error(const std::string& what) {
  std::string first = what.substr(0, what.find('\n'));
  // "ISMRMRD File Error in ismrmrd_open_dataset (./libsrc/dataset.c:984: Failed to open file." -> the
  // message.
  if (const auto colon = first.rfind(": "); first.rfind("ISMRMRD", 0) == 0 && colon != std::string::npos)
    first = first.substr(colon + 2);
  std::string s = trim(first);
  const std::string key = "error message = '";
  if (const auto k = what.find(key); k != std::string::npos) {
    const auto end = what.find('\'', k + key.size());
    if (end != std::string::npos) s += " (" + what.substr(k + key.size(), end - k - key.size()) + ")";
  }
  return s.empty() ? "HDF5 error" : s;
}

}  // namespace radstream
