#include "bench/bench_report.hpp"

#include <cstdio>
#include <fstream>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream::app {

void write_report(const std::string& text, const std::string& path) {
  if (path.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return;
  }
  std::ofstream o(path);
  if (!(o << text)) throw IoError(path + ": cannot write");
  log::info("wrote {}", path);
}

}  // namespace radstream::app
