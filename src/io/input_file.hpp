// Input files are checked at open: every reader refuses what is not a regular file (a FIFO would block the
// open until some writer came, a device or /proc file would read forever, a directory is a mistake), naming
// the path and what it is, before it opens it.
#pragma once
#include <string>

namespace radstream {

// Throws IoError "WHAT PATH: does not exist" or "WHAT PATH: is a FIFO (named pipe), not a regular file" (or a
// directory, a character or block device, a socket); follows symbolic links.
void check_input_file(const std::string& path, const std::string& what);

}  // namespace radstream
