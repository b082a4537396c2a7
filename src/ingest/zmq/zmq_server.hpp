// ZeroMQ as one of the run's protocols: the socket loop (zmq_ingest.hpp) feeding the runtime's own stream,
// the one a simulator, a replay or a scanner bridge sends spokes to (stream.endpoint). It opens no sessions:
// the runtime's own stream has the run's settings.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ingest/zmq/zmq_ingest.hpp"
#include "stream/session_server.hpp"

namespace radstream {

class StreamRuntime;

class ZmqServer : public SessionServer {
 public:
  // Binds or connects at once (an endpoint in use is a ConfigError at start-up).
  explicit ZmqServer(StreamRuntime& rt);
  std::string protocol() const override { return "zmq"; }
  void start() override { ingest_.start(); }
  void stop() override { ingest_.stop(); }
  std::string endpoint() const override { return ingest_.bound_endpoint(); }
  std::vector<std::string> session_lines() const override { return {}; }
  bool feeds_own_stream() const override { return true; }

 private:
  ZmqIngest ingest_;
};

}  // namespace radstream
