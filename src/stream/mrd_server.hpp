// radstream as an MRD (ISMRMRD v1) reconstruction server over TCP (`run --mrd-listen tcp://127.0.0.1:9002`),
// the protocol FIRE/OpenRecon and Gadgetron clients speak (io/mrd_protocol.hpp). Each client connection is
// a session (stream/mrd_session.hpp) with its own pipeline (stream/session_pipeline.hpp): its config selects
// its own reconstruction, its acquisitions go straight to its own front door (the same checks, counters and
// recording as ZeroMQ spokes), and each of its frames goes back on its connection as an image message.
// Sessions are admitted once their header has come, up to max_sessions at once; the others are told busy.
// Listening beyond loopback needs --insecure and an allow-list of client addresses (the protocol has neither
// encryption nor authentication: docs/security.md).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/enum_table.hpp"
#include "stream/ingest_params.hpp"
#include "stream/mrd_images.hpp"
#include "stream/session_server.hpp"

namespace radstream {

class StreamRuntime;
class MrdSession;
class TcpListener;

// Which frames a scanner session gets: every frame, in order (a scanner's database wants the whole series),
// or the newest due one when the reconstruction falls behind (a display).
enum class MrdFrames { All, Latest };
inline constexpr EnumTable<MrdFrames, 2> kMrdFrames{
    "MRD frame policy", {{{MrdFrames::All, "all"}, {MrdFrames::Latest, "latest"}}}};

struct MrdServerParams {
  std::string listen;               // tcp://HOST:PORT; "-": one session on stdin/stdout; empty: off
  int max_sessions = 0;             // 0: sized from the memory budget (max_sessions_auto)
  double message_timeout_s = 10.0;  // a message must arrive whole within this of its first byte
  double header_timeout_s = 10.0;   // a connection must send its XML header within this
  double idle_timeout_s = 30.0;     // a session with no acquisition this long is ended (0: never)
  double send_timeout_s = 10.0;     // a client that takes no bytes this long is dropped
  double drain_timeout_s = 30.0;    // after a client's close: the longest wait for the frames still due
  MrdFrames frames = MrdFrames::All;
  std::string default_config;  // serves a config name the server does not know (with a WRN); empty: refused
  int queue_images = 64;       // images waiting for a slow client; beyond, the oldest is dropped
  MrdPixels pixels = MrdPixels::Int16;
  std::string allow;                  // client addresses admitted beyond loopback (comma-separated)
  std::string config_dir = "config";  // where a config name that is not a method finds NAME.yaml
  // The pipeline's limits (stream.max_samples, stream.max_coils), set by the server: an acquisition beyond
  // them ends the session when its header is read, before any of its body is, as the ingest would refuse it.
  int max_samples = 4096;
  int max_coils = 64;

  template <class V>
  void visit(V& v) {
    v.field("listen", listen,
            "serve MRD (ISMRMRD) clients on this TCP endpoint, e.g. tcp://127.0.0.1:9002; '-': one session "
            "read from standard input, its images written to standard output (empty: off)");
    v.field("max_sessions", max_sessions, 0, 64,
            "MRD sessions served at once, each with its own pipeline (others are told: busy); 0: as many as "
            "the memory budget allows (one per GiB of free GPU memory, or per two CPU cores; 1..16)");
    v.field("message_timeout_s", message_timeout_s, 0.1, 3600.0,
            "an MRD message must arrive whole within this many seconds of its first byte");
    v.field("header_timeout_s", header_timeout_s, 0.1, 3600.0,
            "an MRD client must send its XML header within this many seconds of connecting");
    v.field("idle_timeout_s", idle_timeout_s, 0.0, 86400.0,
            "end an MRD session that sends no acquisition for this many seconds (queries and texts do not "
            "count; 0: never)");
    v.field("send_timeout_s", send_timeout_s, 0.1, 3600.0,
            "drop an MRD client that takes no image this long");
    v.field(
        "drain_timeout_s", drain_timeout_s, 0.1, 3600.0,
        "after an MRD client's close, the longest wait for the frames still due (the wait is the measured "
        "frame time times the frames left, within this)");
    v.choice("frames", frames, kMrdFrames,
             "all: every frame of an MRD session, in order (the client waits when the reconstruction is "
             "behind); latest: the newest due frame wins");
    v.field(
        "default_config", default_config,
        "the config served (with a warning) when an MRD client names one the server does not know; empty: "
        "such a client is refused");
    v.field("queue_images", queue_images, 1, 100000,
            "images queued for a slow MRD client (the oldest dropped)");
    v.choice("pixels", pixels, kMrdPixels,
             "MRD images as int16 magnitudes (12 stored bits), float magnitudes, or complex (image_type 5: "
             "needs cg-sense, nlinv or coil_combine sense)");
    v.field("allow", allow, "MRD client addresses admitted on a non-loopback endpoint (comma-separated)");
    v.field("config_dir", config_dir, "folder of the YAML files an MRD config name may select");
  }
  // Throws ConfigError naming the bad value: a non-local endpoint without `insecure` and an allow-list.
  void validate(bool insecure) const;
  // One session over the program's standard input and output (Gadgetron's --from_stream convention).
  bool pipe() const { return listen == "-"; }
};

// max_sessions 0: one session per GiB of free memory on the GPU (cuda), else one per two CPU cores; 1..16.
int max_sessions_auto(bool cuda);

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
