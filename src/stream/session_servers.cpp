#include "stream/mrd_server.hpp"
#include "stream/run_config.hpp"
#include "stream/session_server.hpp"

namespace radstream {

std::vector<std::unique_ptr<SessionServer>> make_session_servers(const RunConfig& cfg, StreamRuntime& rt) {
  std::vector<std::unique_ptr<SessionServer>> out;
  if (!cfg.mrd.listen.empty()) out.push_back(std::make_unique<MrdServer>(cfg.mrd, cfg.stream, rt));
  return out;
}

}  // namespace radstream
