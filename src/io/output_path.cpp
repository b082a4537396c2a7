#include "io/output_path.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace radstream {

namespace fs = std::filesystem;

namespace {

// Creates the folder when missing; "" when it is there and writable, else why not.
std::string make_folder(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    return "cannot create the folder " + dir + (ec ? " (" + ec.message() + ")" : "");
  if (::access(dir.c_str(), W_OK) != 0)
    return "the folder " + dir + " is not writable (" + std::strerror(errno) + ")";
  return "";
}

}  // namespace

void check_output_folder(const std::string& path, const std::string& option) {
  if (path.empty()) throw ConfigError(option + ": the folder name is empty");
  if (const std::string why = make_folder(path); !why.empty())
    throw IoError(option + " " + path + ": " + why);
}

void check_output_file(const std::string& path, const std::string& option, bool overwrite) {
  if (path.empty()) throw ConfigError(option + ": the file name is empty");
  const fs::path p(path);
  if (fs::is_directory(p)) throw ConfigError(option + " " + path + ": is a folder, not a file name");
  if (p.has_parent_path())
    if (const std::string why = make_folder(p.parent_path().string()); !why.empty())
      throw IoError(option + " " + path + ": " + why);
  if (fs::exists(p)) {
    if (!overwrite)
      throw ConfigError(option + " " + path + ": exists; choose another name or pass --overwrite");
    if (::access(path.c_str(), W_OK) != 0)
      throw IoError(option + " " + path + ": not writable (" + std::strerror(errno) + ")");
    return;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) throw IoError(option + " " + path + ": cannot create the file (" + std::strerror(errno) + ")");
  ::close(fd);
  std::error_code ec;
  fs::remove(p, ec);
}

}  // namespace radstream
