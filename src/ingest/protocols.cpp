#include "ingest/protocols.hpp"

#include "ingest/mrd/mrd_server.hpp"
#include "ingest/zmq/zmq_server.hpp"
#include "stream/run_config.hpp"
#include "stream/stream_runtime.hpp"

namespace radstream {

std::vector<std::unique_ptr<SessionServer>> make_protocol_servers(const RunConfig& cfg, StreamRuntime& rt) {
  std::vector<std::unique_ptr<SessionServer>> out;
  out.push_back(std::make_unique<ZmqServer>(rt));
  if (!cfg.mrd.listen.empty()) out.push_back(std::make_unique<MrdServer>(cfg.mrd, cfg.stream, rt));
  return out;
}

}  // namespace radstream
