// The ingest thread: receives wire messages on a PULL (default) or SUB socket, validates every frame before
// use, tracks sequence numbers, applies stream headers (reallocating the spoke ring when the geometry
// changes), writes good spokes into the ring (whose device mirror uploads them at once) and hands every
// received spoke to the recorder. Bad messages are counted by reason, logged once per reason, and skipped.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "core/enum_table.hpp"
#include "core/stream_header.hpp"
#include "stream/delay_corrector.hpp"
#include "stream/metrics.hpp"
#include "stream/sequence_tracker.hpp"
#include "stream/spoke_ring.hpp"
#include "wire/connection_guard.hpp"
#include "wire/wire.hpp"

namespace radstream {

class Recorder;

enum class ReceiveSocket { Pull, Sub };
inline constexpr EnumTable<ReceiveSocket, 2> kReceiveSockets{
    "receive socket", {{{ReceiveSocket::Pull, "pull"}, {ReceiveSocket::Sub, "sub"}}}};

struct IngestParams {
  std::string endpoint = "tcp://127.0.0.1:5555";
  ReceiveSocket socket = ReceiveSocket::Pull;  // pull (lossless) | sub (a tap)
  bool bind = true;
  int rcvhwm = 4000;
  int max_samples = 4096;  // what scanners send (and far more than radial readouts need)
  int max_coils = 64;
  long accept_stream_id = 0;      // 0: follow the first stream whose header arrives
  double sender_timeout_s = 2.0;  // report a silent sender after this long
  int ring_margin = 1024;         // ring slots beyond the largest window
  int max_ring_mib = 4096;        // a stream header whose spoke ring would need more is rejected
  std::string curve_key;          // CURVE: this receiver's key pair file (radstream keygen); empty: no CURVE
  std::string curve_clients;      // CURVE: allow-list of client public keys (with curve_key)
  bool insecure = false;          // allow binding a non-local endpoint without CURVE (warned)
  int slices = 1;                 // slices (MRD idx.slice 0..slices-1) reconstructed, each on its own
  std::string gradient_delay = "off";  // off | auto | A:B:C (stream/delay_corrector.hpp)
  long gradient_delay_every = 125;     // auto: frames between two RING estimates
  ConnectionLimits connections;        // every listening socket of the receiver (wire/connection_guard.hpp)
  std::string memory_limit = "auto";  // what one stream header may make the receiver allocate (memory_budget)

  template <class V>
  void visit(V& v) {
    v.field("endpoint", endpoint, "ZeroMQ endpoint to receive on (tcp://127.0.0.1:5555)");
    v.choice("socket", socket, kReceiveSockets, "pull (lossless) or sub (a tap that may drop)");
    v.field("bind", bind, "bind the endpoint (true) or connect to it (false)");
    v.field("rcvhwm", rcvhwm, 1, 1 << 20, "receive high-water mark, messages");
    v.field("max_samples", max_samples, 2, 65535, "largest samples per spoke accepted");
    v.field("max_coils", max_coils, 1, 1024, "largest coil count accepted");
    v.field(
        "accept_stream_id", accept_stream_id, 0L, 4294967295L,
        "follow only this stream id; 0: the first stream, then the next one after it closes or falls silent");
    v.field("sender_timeout_s", sender_timeout_s, 0.05, 3600.0, "report the sender lost after this silence");
    v.field("ring_margin", ring_margin, 16, 1 << 20, "spoke ring slots beyond the largest window");
    v.field("max_ring_mib", max_ring_mib, 16, 1 << 20,
            "largest spoke ring (MiB) a stream header may ask for; a larger one is rejected, the stream in "
            "hand goes on");
    v.field("curve_key", curve_key,
            "CURVE key pair file of this receiver (radstream keygen); senders and subscribers must then "
            "authenticate");
    v.field("curve_clients", curve_clients,
            "CURVE allow-list: the public keys of the senders and subscribers admitted");
    v.field("insecure", insecure,
            "allow binding a non-local (or wildcard) endpoint without CURVE: any host could inject spokes");
    v.field(
        "slices", slices, 1, kMaxSlices,
        "slices (MRD idx.slice 0..N-1) of the stream, each with its own window, frames and worker; a spoke "
        "of another slice is rejected (slice_range)");
    v.field("gradient_delay", gradient_delay,
            "gradient-delay correction of every spoke's trajectory: off, auto (RING on the latest 64 spokes, "
            "again every gradient_delay_every frames) or A:B:C (BART's traj -q x:y:xy, in samples)");
    v.field("gradient_delay_every", gradient_delay_every, 1L, 1L << 40,
            "auto gradient delays: frames between two RING estimates (a frame every stride spokes)");
    v.field(
        "memory_limit", memory_limit,
        "memory one stream header may make the receiver allocate (spoke rings, grids, maps, solver work), "
        "checked before anything is allocated: auto (a quarter of the RAM; 90 % of the GPU's free memory) or "
        "a "
        "size (8G, 512M)");
    v.field("max_connections", connections.max_connections, 1, 1 << 20,
            "connections each listening socket (spokes, published images) keeps open at once; more are shut "
            "down at once (lowered to what the descriptor limit allows)");
    v.field("max_connections_per_address", connections.max_per_address, 1, 1 << 20,
            "connections one peer address may keep open on each listening socket");
    v.field("handshake_timeout_s", connections.handshake_timeout_s, 0.1, 3600.0,
            "a connection that has not completed its ZeroMQ/CURVE handshake by then is dropped");
  }
  void validate() const;
};

class Ingest {
 public:
  // `max_window`: the largest frame window the assembler may ask for (sizes the ring).
  Ingest(zmq::context_t& ctx, const IngestParams& p, Metrics& metrics, bool device_ring, int max_window,
         Recorder* recorder = nullptr);
  ~Ingest();
  Ingest(const Ingest&) = delete;
  Ingest& operator=(const Ingest&) = delete;

  // Every frame will be made (frames.skip_when_behind false): each new ring keeps all its spokes until the
  // reconstruction says which it still needs, so none is overwritten before its frame (call before start()).
  void keep_spokes_for_every_frame() { keep_all_ = true; }
  // Several GPUs: slice s's spoke ring (and its device mirror) lives on GPU gpus[s] (call before start();
  // default: the current GPU for every slice).
  void set_ring_gpus(std::vector<int> gpus) { ring_gpus_ = std::move(gpus); }
  // The frames' stride, in spokes: the gradient-delay estimate is repeated every gradient_delay_every frames.
  void set_frame_stride(int stride) { delays_->set_stride(stride); }
  // Checked for every stream header before anything is allocated: "" when what it implies fits the memory
  // budget, else why not (the header is then rejected, named and counted; the stream in hand goes on).
  void set_memory_check(std::function<std::string(const StreamHeader&)> check) {
    memory_check_ = std::move(check);
  }
  int slices() const { return p_.slices; }

  // A second endpoint the receive socket binds (before start()): the MRD server's inproc feed.
  void bind_also(const std::string& endpoint) { sock_.bind(endpoint); }
  void start();
  void stop();  // joins the thread

  // One slice's view (every slice shares the header and the generation; each has its own ring).
  struct State {
    std::shared_ptr<SpokeRing> ring;  // null until the first header
    StreamHeader header;
    std::uint64_t generation = 0;  // +1 per geometry change
  };
  State state(int slice = 0) const;
  // Waits until slice `slice`'s ring of `generation` holds at least `count` spokes, the generation changes,
  // the ingest stops, or the timeout passes.
  void wait_for(std::uint64_t generation, std::uint64_t count, std::chrono::milliseconds timeout,
                int slice = 0) const;

  // Replaces the recorder (null: recording off) between messages; a new one starts its file with the current
  // stream header. The caller keeps the old one alive until this returns.
  void set_recorder(Recorder* r);
  std::string bound_endpoint() const;  // the endpoint actually bound (resolves tcp://...:* ports)

  // Handles one message given as frames (the thread's own path, public for tests).
  void handle(std::span<const std::span<const std::byte>> parts);

 private:
  void run();
  // `continues`: the header repeats that of the stream in hand (same id, neither closed nor restarted), so
  // its frames go on; any other header starts new frames, even of the same geometry.
  void on_header(const wire::Message& m, bool continues);
  void on_spoke(const wire::Message& m, std::span<const std::span<const std::byte>> parts);
  void reject(wire::Reject r, const std::string& detail);
  // Spokes that come before any stream header (a receiver started or restarted mid-stream) are held, up to
  // kMaxHeldBytes, until the stream's repeated header comes, then taken in order; those of another stream,
  // those over the bound and those no header ever claims are counted as no_header.
  static constexpr std::size_t kMaxHeldBytes = std::size_t(64) << 20;
  void hold_early_spoke(std::uint32_t stream_id, std::span<const std::span<const std::byte>> parts);
  void take_held_spokes(std::uint32_t header_stream_id);
  void drop_held_spokes(const std::string& why);
  std::deque<std::vector<std::vector<std::byte>>> held_;
  std::size_t held_bytes_ = 0;
  std::uint32_t held_stream_ = 0;
  // One stream per pipeline: whether a message of stream `id` is taken (false: counted as foreign_stream).
  bool follows(std::uint32_t id, wire::MsgType type, std::int64_t now);

  IngestParams p_;
  Metrics& metrics_;
  std::unique_ptr<DelayCorrector> delays_;
  bool device_ring_;
  bool keep_all_ = false;
  std::function<std::string(const StreamHeader&)> memory_check_;
  std::unique_ptr<ConnectionGuard> guard_;  // the receive socket's connection limits and counts
  int max_window_;
  Recorder* recorder_;
  std::mutex rec_m_;  // guards recorder_ against set_recorder
  wire::Limits limits_;
  zmq::socket_t sock_;
  std::string endpoint_;  // the stream endpoint as bound (its port resolved)
  std::thread thread_;
  std::atomic<bool> running_{false};

  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  State state_;                                    // the header and generation (ring: unused)
  std::vector<std::shared_ptr<SpokeRing>> rings_;  // one per slice, made with each new stream header
  std::vector<int> ring_gpus_;
  std::string xml_;
  SequenceTracker seq_;
  // The counters when the current stream (by id) began, so that its close reports its own spokes.
  std::uint32_t counted_stream_ = 0;
  std::uint64_t stream_spokes0_ = 0, stream_missing0_ = 0;
  std::optional<std::uint32_t> followed_;  // the stream this pipeline follows (set by its header)
  std::int64_t followed_last_ns_ = 0;      // its last accepted message
  bool followed_closed_ = false;
  std::array<bool, wire::kRejectCount> logged_{};
  // Stream events (headers, stream switches, closes, texts, restarts) are logged at most 5 times per 10 s:
  // a broken or hostile sender cannot flood the log. The next window's first line says how many were left
  // out (they are all counted in the metrics).
  struct EventBudget {
    std::int64_t window_start = 0;
    int used = 0;
    long left_out = 0;
    bool allow(std::int64_t now);
  } events_;
};

}  // namespace radstream
