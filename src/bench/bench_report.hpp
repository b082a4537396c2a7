// Where a benchmark's JSON goes: the --out file (named in the log; a write that fails is an IoError), or
// standard output when no file is named.
#pragma once
#include <string>

namespace radstream::app {

void write_report(const std::string& text, const std::string& path);

}  // namespace radstream::app
