// The protocols a run serves, in one place: a new protocol adapter is its folder under src/ingest/ and one
// line in make_protocol_servers (docs/architecture.md, "Add a protocol").
#pragma once
#include <memory>
#include <vector>

#include "stream/session_server.hpp"

namespace radstream {

class StreamRuntime;
struct RunConfig;

// Every protocol server `cfg` asks for, listening already (a port in use is a ConfigError at start-up):
// ZeroMQ for the runtime's own stream, always; MRD when mrd.listen is set. Pass it to StreamRuntime.
std::vector<std::unique_ptr<SessionServer>> make_protocol_servers(const RunConfig& cfg, StreamRuntime& rt);

}  // namespace radstream
