#include "io/input_file.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.hpp"

namespace radstream {

void check_input_file(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);  // follows links: the target is what gets read
  const char* kind = nullptr;
  switch (st.type()) {
    case fs::file_type::regular:
      return;
    case fs::file_type::not_found:
      throw IoError(fmt::format("{} {}: does not exist", what, path));
    case fs::file_type::directory:
      kind = "a directory";
      break;
    case fs::file_type::fifo:
      kind = "a FIFO (named pipe)";
      break;
    case fs::file_type::character:
      kind = "a character device";
      break;
    case fs::file_type::block:
      kind = "a block device";
      break;
    case fs::file_type::socket:
      kind = "a socket";
      break;
    default:
      throw IoError(fmt::format("{} {}: cannot be read ({})", what, path,
                                ec ? ec.message() : std::string("not a regular file")));
  }
  throw IoError(fmt::format("{} {}: is {}, not a regular file", what, path, kind));
}

}  // namespace radstream
