// A protocol server that opens sessions on the runtime (the MRD server on TCP or on a pipe): started and
// stopped with the runtime, asked for its endpoint and for one status line per session in progress. The
// runtime holds the servers the configuration asks for and knows none of them by name: a new protocol is its
// server class plus one line in make_session_servers (stream/session_servers.cpp).
#pragma once
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
  // A server of one session (a pipe) is finished when that session ended; the run then stops. failure():
  // why that session did not complete ("" when it did), for the program's exit status.
  virtual bool finished() const { return false; }
  virtual std::string failure() const { return {}; }
};

// Every protocol server `cfg` asks for, listening already (a port in use is a ConfigError at start-up).
std::vector<std::unique_ptr<SessionServer>> make_session_servers(const RunConfig& cfg, StreamRuntime& rt);

}  // namespace radstream
