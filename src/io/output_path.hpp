// Output paths are checked before any work, so that a run, a benchmark or a simulation never ends by failing
// to write what it made: the folder is created, and the file is proven creatable (a test file, removed), or
// writable when it exists. The errors name the option and the path (IoError: exit 3; ConfigError: exit 2).
#pragma once
#include <string>

namespace radstream {

// A file to be written later. An existing file is refused unless `overwrite` (ConfigError naming `option`
// and the way to allow it) - pass true where replacing is the documented behaviour (metrics, benchmarks).
void check_output_file(const std::string& path, const std::string& option, bool overwrite);

// A folder to write files into: created when missing, and writable.
void check_output_folder(const std::string& path, const std::string& option);

}  // namespace radstream
