// A protocol server (src/ingest/): ZeroMQ feeding the runtime's own stream, or MRD opening sessions on the
// runtime (on TCP or on a pipe): started and stopped with the runtime, asked for its endpoint and for one
// status line per session in progress. The runtime holds the servers its maker gives it and knows none of
// them by name: a new protocol is its folder under src/ingest/ plus one line in make_protocol_servers
// (ingest/protocols.cpp).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace radstream {

class StreamRuntime;
struct RunConfig;

class SessionServer {
 public:
  virtual ~SessionServer() = default;
  virtual std::string protocol() const = 0;  // "mrd"
  virtual void start() = 0;
  virtual void stop() = 0;                   // ends every session and joins the threads
  virtual std::string endpoint() const = 0;  // with the port actually bound
  virtual std::vector<std::string> session_lines() const = 0;
  // True for the server that feeds the runtime's own stream (its endpoint is the runtime's endpoint()).
  virtual bool feeds_own_stream() const { return false; }
  // A server of one session (a pipe) is finished when that session ended; the run then stops. failure():
  // why that session did not complete ("" when it did), for the program's exit status.
  virtual bool finished() const { return false; }
  virtual std::string failure() const { return {}; }
};

// What makes a run's protocol servers (ingest/protocols.hpp's make_protocol_servers), called by the runtime
// once its own stream's front door exists.
using ProtocolServers =
    std::function<std::vector<std::unique_ptr<SessionServer>>(const RunConfig&, StreamRuntime&)>;

}  // namespace radstream
