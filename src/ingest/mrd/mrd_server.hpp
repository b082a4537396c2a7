// radstream as an MRD (ISMRMRD v1) reconstruction server over TCP (`run --mrd-listen tcp://127.0.0.1:9002`),
// the protocol FIRE/OpenRecon and Gadgetron clients speak (io/mrd_protocol.hpp). Each client connection is
// a session (ingest/mrd/mrd_session.hpp) with its own pipeline (stream/session_pipeline.hpp): its config
// selects its own reconstruction, its acquisitions go straight to its own front door (the same checks,
// counters and recording as ZeroMQ spokes), and each of its frames goes back on its connection as an image
// message. Sessions are admitted once their header has come, up to max_sessions at once; the others are told
// busy. Listening beyond loopback needs --insecure and an allow-list of client addresses (the protocol has
// neither encryption nor authentication: docs/security.md).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ingest/mrd/mrd_images.hpp"
#include "stream/ingest_params.hpp"
#include "stream/mrd_params.hpp"
#include "stream/session_server.hpp"

namespace radstream {

class StreamRuntime;
class MrdSession;
class TcpListener;

// On a pipe (listen "-") the server has one session, on the program's standard input and output, and is
// finished when it ends; the same session code serves it as a TCP client.
class MrdServer : public SessionServer {
 public:
  // Listens at once (a port in use is a ConfigError at start-up). `stream`: the limits every session's
  // acquisitions meet (max_samples, max_coils), checked as each acquisition's header is read. On a pipe:
  // a ConfigError when standard output is a terminal (images are binary).
  MrdServer(const MrdServerParams& p, const IngestParams& stream, StreamRuntime& runtime);
  ~MrdServer() override;
  MrdServer(const MrdServer&) = delete;
  MrdServer& operator=(const MrdServer&) = delete;

  std::string protocol() const override { return "mrd"; }
  void start() override;
  void stop() override;  // ends every session (their clients get a close) and joins the threads
  std::string endpoint() const override;
  int max_sessions() const { return max_sessions_; }
  // A session whose header has come asks for its place: true when one of max_sessions is free (it is then
  // taken until release_slot()), else false with `why` (the client is told, then closed).
  bool claim_slot(std::string& why);
  void release_slot();
  // One line per open session, for the status line and the viewer ("session 3 127.0.0.1:5000 gridding ...").
  std::vector<std::string> session_lines() const override;
  bool finished() const override;
  std::string failure() const override;

 private:
  void accept_loop();
  void start_pipe_session();
  void reap();  // joins finished sessions
  // Connections beyond max_sessions that may be sending their header at once (a flood is told busy).
  static constexpr std::size_t kMaxWaiting = 16;

  MrdServerParams p_;
  StreamRuntime& rt_;
  int max_sessions_ = 1;
  std::unique_ptr<TcpListener> listener_;
  std::vector<std::string> allow_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex m_;  // guards sessions_ and slots_
  std::vector<std::shared_ptr<MrdSession>> sessions_;
  int slots_ = 0;  // sessions admitted (their header came) and not yet ended
  std::uint32_t next_session_ = 0;
  std::string pipe_outcome_;  // a pipe session's end ("completed", "failed: ..."), under m_
  int stdout_flags_ = -1;     // standard output's flags before the pipe session made it non-blocking
};

}  // namespace radstream
