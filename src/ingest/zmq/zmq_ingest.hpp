// The ZeroMQ protocol adapter: a thread that receives wire messages on a PULL (default) or SUB socket,
// decodes and validates each one, chooses the stream it follows, holds spokes that come before their header,
// and hands the stream's header, spokes and close to its front door (stream/stream_intake.hpp), which
// checks, sequences, counts, records and writes them into the spoke rings. Bad messages are counted by
// reason, logged once per reason, and skipped. The runtime's own stream is fed by one (ZmqServer, registered
// in ingest/protocols.cpp); tests and the benchmarks may run one with a front door of its own.
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

#include "core/stream_header.hpp"
#include "stream/ingest_params.hpp"
#include "stream/metrics.hpp"
#include "stream/stream_intake.hpp"
#include "wire/connection_guard.hpp"
#include "wire/wire.hpp"

namespace radstream {

class Recorder;

class ZmqIngest {
 public:
  // Feeds `intake`, the front door of a stream someone else owns (the runtime's own stream); binds or
  // connects at once (an endpoint in use is a ConfigError here).
  ZmqIngest(zmq::context_t& ctx, const IngestParams& p, Metrics& metrics, StreamIntake& intake);
  // With a front door of its own. `max_window`: the largest frame window the assembler may ask for (sizes
  // the ring).
  ZmqIngest(zmq::context_t& ctx, const IngestParams& p, Metrics& metrics, bool device_ring, int max_window,
            Recorder* recorder = nullptr);
  ~ZmqIngest();
  ZmqIngest(const ZmqIngest&) = delete;
  ZmqIngest& operator=(const ZmqIngest&) = delete;

  // Every frame will be made (frames.skip_when_behind false): each new ring keeps all its spokes until the
  // reconstruction says which it still needs, so none is overwritten before its frame (call before start()).
  void keep_spokes_for_every_frame() { intake_->keep_spokes_for_every_frame(); }
  // Several GPUs: slice s's spoke ring (and its device mirror) lives on GPU gpus[s] (call before start();
  // default: the current GPU for every slice).
  void set_ring_gpus(std::vector<int> gpus) { intake_->set_ring_gpus(std::move(gpus)); }
  // The frames' stride, in spokes: the gradient-delay estimate is repeated every gradient_delay_every frames.
  void set_frame_stride(int stride) { intake_->set_frame_stride(stride); }
  // Checked for every stream header before anything is allocated: "" when what it implies fits the memory
  // budget, else why not (the header is then rejected, named and counted; the stream in hand goes on).
  void set_memory_check(std::function<std::string(const StreamHeader&)> check) {
    intake_->set_memory_check(std::move(check));
  }
  int slices() const { return p_.slices; }

  void start();
  void stop();  // joins the thread

  // The followed stream's front door: what the reconstruction workers read.
  StreamIntake& intake() { return *intake_; }
  using State = SpokeSource::State;
  State state(int slice = 0) const { return intake_->state(slice); }

  // Replaces the recorder (null: recording off) between messages; a new one starts its file with the current
  // stream header. The caller keeps the old one alive until this returns.
  void set_recorder(Recorder* r) { intake_->set_recorder(r); }
  std::string bound_endpoint() const;  // the endpoint actually bound (resolves tcp://...:* ports)

  // Handles one message given as frames (the thread's own path, public for tests).
  void handle(std::span<const std::span<const std::byte>> parts);

 private:
  ZmqIngest(zmq::context_t& ctx, const IngestParams& p, Metrics& metrics, std::unique_ptr<StreamIntake> own);
  void open(zmq::context_t& ctx);  // the socket's options, CURVE, the guard, bind or connect
  void run();
  void reject(wire::Reject r, const std::string& detail) { intake_->reject(r, detail); }
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
  std::unique_ptr<ConnectionGuard> guard_;  // the receive socket's connection limits and counts
  wire::Limits limits_;
  zmq::socket_t sock_;
  std::unique_ptr<StreamIntake> owned_intake_;  // null when it feeds someone else's
  StreamIntake* intake_;
  std::string endpoint_;  // the stream endpoint as bound (its port resolved)
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::optional<std::uint32_t> followed_;  // the stream this pipeline follows (set by its header)
  std::int64_t followed_last_ns_ = 0;      // its last accepted message
  bool followed_closed_ = false;
};

}  // namespace radstream
