#include "stream/mrd_params.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/cuda_runtime.hpp"
#include "wire/endpoint.hpp"

namespace radstream {

std::vector<std::string> mrd_allow_list(const std::string& allow) {
  std::vector<std::string> out;
  std::stringstream in(allow);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void MrdServerParams::validate(bool insecure) const {
  if (listen.empty() || pipe()) return;
  const Endpoint e = parse_endpoint(listen, "--mrd-listen");
  if (e.transport != "tcp")
    throw ConfigError(fmt::format("--mrd-listen '{}': MRD clients speak TCP (tcp://HOST:PORT)", listen));
  if (e.local) return;
  if (!insecure || mrd_allow_list(allow).empty())
    throw ConfigError(fmt::format(
        "--mrd-listen {} is reachable from other hosts, and the MRD protocol has neither encryption nor "
        "authentication: any of them could send data or read the images. Listen on 127.0.0.1 and tunnel (see "
        "docs/security.md), or give --insecure and the client addresses admitted with --mrd-allow",
        listen));
  log::warn("security: MRD server {} is open to {} without authentication (--insecure)", listen, allow);
}

int max_sessions_auto(bool cuda) {
  std::size_t n = 0;
  if (cuda) {
    n = gpu::free_memory(0) >> 30;  // a scanner-sized session needs well under a GiB (GPU 0: the default)
  } else {
    n = std::max(1u, std::thread::hardware_concurrency()) / 2;
  }
  return int(std::clamp<std::size_t>(n, 1, 16));
}

}  // namespace radstream
