// radstream as an MRD (ISMRMRD v1) reconstruction server over TCP (`run --mrd-listen tcp://127.0.0.1:9002`),
// the protocol FIRE/OpenRecon and Gadgetron clients speak (io/mrd_protocol.hpp). Each client connection is
// a session (stream/mrd_session.hpp): its config selects the reconstruction, its XML header and acquisitions
// become wire messages of a stream of their own and enter the ingest through an inproc socket that the ingest
// also binds, so they meet the same validation, counters, recording, sliding window, viewer and image
// publisher as ZeroMQ spokes. Each frame goes back on the same connection as an image message (this class is
// the runtime's sink that routes them). One session at a time by default; others are told the server is busy.
// Listening beyond loopback needs --insecure and an allow-list of client addresses (the protocol has neither
// encryption nor authentication: docs/security.md).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "stream/mrd_images.hpp"
#include "stream/sink.hpp"

namespace radstream {

class StreamRuntime;
class MrdSession;
class TcpListener;

struct MrdServerParams {
  std::string listen;  // tcp://HOST:PORT; empty: off
  int max_sessions = 1;
  double message_timeout_s = 10.0;  // a message must arrive whole within this of its first byte
  double idle_timeout_s = 600.0;    // a client silent this long between messages is dropped (0: never)
  double send_timeout_s = 10.0;     // a client that takes no bytes this long is dropped
  double drain_timeout_s = 30.0;    // after a client's close: the longest wait for the frames still due
  int queue_images = 64;            // images waiting for a slow client; beyond, the oldest is dropped
  MrdPixels pixels = MrdPixels::Int16;
  std::string allow;                  // client addresses admitted beyond loopback (comma-separated)
  std::string config_dir = "config";  // where a config name that is not a method finds NAME.yaml
  // The pipeline's limits (stream.max_samples, stream.max_coils), set by the runtime: an acquisition beyond
  // them ends the session when its header is read, before any of its body is, as the ingest would refuse it.
  int max_samples = 4096;
  int max_coils = 64;

  template <class V>
  void visit(V& v) {
    v.field("listen", listen,
            "serve MRD (ISMRMRD) clients on this TCP endpoint, e.g. tcp://127.0.0.1:9002 (empty: off)");
    v.field("max_sessions", max_sessions, 1, 64, "MRD clients served at once (others are told: busy)");
    v.field("message_timeout_s", message_timeout_s, 0.1, 3600.0,
            "an MRD message must arrive whole within this many seconds of its first byte");
    v.field("idle_timeout_s", idle_timeout_s, 0.0, 86400.0,
            "drop an MRD client silent this long between messages (0: never)");
    v.field("send_timeout_s", send_timeout_s, 0.1, 3600.0,
            "drop an MRD client that takes no image this long");
    v.field("drain_timeout_s", drain_timeout_s, 0.1, 3600.0,
            "after an MRD client's close, the longest wait for the frames still due");
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
};

class MrdServer : public Sink {
 public:
  // Listens at once (a port in use is a ConfigError at start-up). `ingest_endpoint`: the inproc endpoint the
  // ingest binds beside its own.
  MrdServer(const MrdServerParams& p, StreamRuntime& runtime, std::string ingest_endpoint);
  ~MrdServer() override;
  MrdServer(const MrdServer&) = delete;
  MrdServer& operator=(const MrdServer&) = delete;

  void start();
  void stop();                   // ends every session (their clients get a close) and joins the threads
  std::string endpoint() const;  // with the port actually bound

  // Sink: the frame goes back to the session whose stream the pipeline follows (the oldest open session).
  std::string name() const override { return "mrd"; }
  void consume(const FrameResult& f) override;

 private:
  void accept_loop();
  void reap();  // joins finished sessions

  MrdServerParams p_;
  StreamRuntime& rt_;
  std::string ingest_endpoint_;
  std::unique_ptr<TcpListener> listener_;
  std::vector<std::string> allow_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::mutex m_;  // guards sessions_ and next_series_
  std::vector<std::shared_ptr<MrdSession>> sessions_;
  std::uint32_t next_session_ = 0;
};

}  // namespace radstream
