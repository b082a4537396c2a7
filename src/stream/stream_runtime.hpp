// The streaming runtime (DESIGN.md section 6), wired from its parts: the ingest thread (stream/ingest) feeds
// the spoke rings (one per slice); one ReconWorker per slice (stream/recon_worker: FrameScheduler + chain, on
// its GPU with placement.gpus) makes that slice's frames, so a slice that fails stops only itself; the sink
// thread hands them to the Sinks (stream/sink: image publisher, image files); the LatestFrame mailbox holds
// the newest for a viewer (one per slice); the Recorder (ingest's tap, its own thread) writes every spoke; a
// reporter prints one status line a second. Queue policies:
//  - ingest -> ring: never drops; the ingest waits only while the worker copies a window it would overwrite;
//  - ring -> reconstruction: the newest due frame wins when behind (frames, not spokes, are skipped and
//    counted); frames.skip_when_behind: false makes every frame, in order, while the ring still holds it;
//  - reconstruction -> sinks: 8 frames; when full the oldest is dropped and counted; the mailbox always holds
//    the newest;
//  - recorder: never drops (recorder.hpp).
// Each lock guards one thing: the sink queue, the mailbox, the recorder switch, the worker's settings.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "recon/memory_account.hpp"
#include "stream/frame_result.hpp"
#include "stream/latest_frame.hpp"
#include "stream/metrics.hpp"
#include "stream/once_log.hpp"
#include "stream/recon_worker.hpp"
#include "stream/recorder.hpp"
#include "stream/run_config.hpp"
#include "stream/session_mailboxes.hpp"
#include "stream/session_pipeline.hpp"
#include "stream/session_server.hpp"
#include "stream/sink.hpp"
#include "stream/stream_intake.hpp"
#include "wire/curve.hpp"
#include "wire/wire.hpp"

namespace radstream {

using wire::kImageMagic;  // the published image message (wire.hpp)

class SessionServer;

class StreamRuntime {
 public:
  // `protocols` makes the servers that feed it (ingest/protocols.hpp's make_protocol_servers: ZeroMQ for its
  // own stream, MRD sessions when asked); they bind at once.
  StreamRuntime(const RunConfig& cfg, const Registry& registry, const ProtocolServers& protocols);
  ~StreamRuntime();
  StreamRuntime(const StreamRuntime&) = delete;
  StreamRuntime& operator=(const StreamRuntime&) = delete;

  void start();
  void stop();  // clean: stops the ingest, finishes the frame in flight, drains the sinks and the recorder

  // Between frames, while running. Throws ConfigError naming a bad value.
  void set_window(int w);
  void set_stride(int s);
  // New reconstruction settings (method, DCF, kernel, FFT engine, backend...), validated and resolved here,
  // in the caller (an unusable backend is refused with the reason), applied between frames by rebuilding the
  // chain. The running chain stays when they are refused.
  // slice -1: every slice; k: slice k only (the others keep theirs).
  void set_recon(const ReconParams& p, int slice = -1);
  ReconParams recon(int slice = 0) const { return worker(slice).recon(); }
  // -1: the combined image; k >= 0: coil k's magnitude (needs per-coil images: not with the fused tail).
  void set_coil_view(int coil) {
    for (auto& w : workers_) w->set_coil_view(coil);
  }
  int coil_view() const { return workers_[0]->coil_view(); }
  int slices() const { return int(workers_.size()); }
  int slice_gpu(int slice) const { return worker(slice).gpu(); }  // -1: the current GPU (or the CPU)
  // Starts recording every received spoke into `path` (.h5), or stops (empty). Throws ConfigError/IoError.
  void set_recording(const std::string& path);
  std::string recording() const;
  // The current (or else the last) recording: "N spokes in FILE", or "FAILED: ..." when writes failed.
  std::string recording_status() const;
  std::string endpoint() const;  // its own stream's, "" when no server feeds it
  StreamHeader stream_header() const { return intake_->state(0).header; }
  // The front door of the runtime's own stream, for the protocol server that feeds it.
  StreamIntake& own_intake() { return *intake_; }
  std::string last_error(int slice = 0) const { return worker(slice).last_error(); }
  int window() const { return workers_[0]->window(); }
  int stride() const { return workers_[0]->stride(); }
  Backend backend() const { return workers_[0]->backend(); }

  Metrics& metrics() { return metrics_; }
  // A session's own pipeline (an MRD connection): `s` starts from the server's defaults (config()) with the
  // session's own config applied; validated and resolved here (backend, GPU by the placement, the memory
  // check of its stream headers, its recording). Throws ConfigError naming the bad value. Nothing of it
  // changes this runtime's own stream or any other session.
  // `hold`: what the session holds of the memory all streams share (memory_account()); its stream
  // headers reserve into it, and it is given back when the last owner (the session, its pipeline) drops it.
  std::unique_ptr<SessionPipeline> open_session(SessionSettings s, ReconWorker::Emit emit,
                                                std::shared_ptr<MemoryAccount::Hold> hold);
  // Checks a session's stream header against the per-stream limit (stream.memory_limit) and reserves it in
  // the memory all streams share (stream.memory_limit_total): "" when it fits, else why not.
  std::string reserve_memory(const SessionSettings& s, const StreamHeader& h,
                             MemoryAccount::Hold& hold) const;
  const MemoryAccount& memory_account() const { return *memory_; }
  // How a frame enters the sinks' queue when it is full: a stream that wants every frame waits for room (its
  // worker then runs at the sinks' pace, as its intake waits for the worker: nothing lost); a live one drops
  // the oldest queued frame (counted: sink_dropped).
  enum class SinkDelivery { DropOldest, Wait };
  // A session's frame for the run's own sinks (image files under the session's name; not the viewer's
  // mailbox, the publisher or on_frame, which are the runtime's own stream's). Any thread.
  // The session's newest frame is also kept for the viewer's session columns until session_ended().
  void session_frame(std::shared_ptr<const FrameResult> f, SinkDelivery delivery) {
    session_latest_.put(f);
    to_sinks(std::move(f), delivery);
  }
  void session_ended(const std::string& session) { session_latest_.remove(session); }
  // The newest frame of each session in progress that has made one (the viewer's columns).
  std::vector<SessionMailboxes::Entry> session_frames() const { return session_latest_.all(); }
  // A closed session's counts, added into the run's totals (metrics()).
  void absorb(const Metrics& session) { metrics_.absorb(session); }
  const RunConfig& config() const { return cfg_; }
  const Registry& registry() const { return registry_; }
  zmq::context_t& zmq_context() { return zctx_; }
  // A protocol server's endpoint with its port ("mrd": --mrd-listen), empty when it is not serving.
  std::string endpoint_of(const std::string& protocol) const;
  // One line per protocol session in progress: client, config, settings, frames due/made/sent.
  std::vector<std::string> session_lines() const;
  // A server of one session (run --mrd-stdin) whose session ended: why it failed ("" when it completed);
  // nullopt while every server still serves.
  std::optional<std::string> finished_server() const;
  double elapsed_s() const;
  std::shared_ptr<const FrameResult> latest(int slice = 0) const {
    return latest_.at(std::size_t(slice))->get();
  }
  // Until slice `slice` has made n frames.
  bool wait_frames(std::uint64_t n, std::chrono::milliseconds timeout, int slice = 0) const {
    return latest_.at(std::size_t(slice))->wait_count(n, timeout);
  }
  // Called on the reconstruction thread for every frame (tests; keep it short). Set before start().
  void on_frame(std::function<void(const FrameResult&)> f) { on_frame_ = std::move(f); }
  std::string report();  // the status line
  // True while every frame due with the spokes received so far has been reconstructed (or dropped), in
  // every slice.
  bool drained() const {
    for (const auto& w : workers_)
      if (!w->drained()) return false;
    return true;
  }
  void write_metrics_json() const;
  // What a stop will wait for, in words: the frames in the making (and for how long so far), the sessions
  // that will be drained (each at most mrd.drain_timeout_s), the recording to close.
  std::string stop_outlook() const;

 private:
  void emit(std::shared_ptr<const FrameResult> f);  // on the reconstruction thread
  void to_sinks(std::shared_ptr<const FrameResult> f, SinkDelivery delivery);
  void sink_loop();
  void say_skip_hint(std::int64_t now);
  std::atomic<bool> skip_hint_said_{false};  // the --no-skip hint, said once per run
  void report_loop();
  std::string server_endpoints() const;  // " or a mrd client on tcp://..." for each protocol server
  const ReconWorker& worker(int slice) const { return *workers_.at(std::size_t(slice)); }

  RunConfig cfg_;
  const Registry& registry_;
  Metrics metrics_;
  std::shared_ptr<RecordingNames> record_names_;  // every session's recording file names
  std::atomic<int> sessions_opened_{0};           // for the GPU placement of sessions
  std::shared_ptr<MemoryAccount> memory_;         // what all streams together may hold
  MemoryLimit per_stream_limit_;                  // what one stream header may need
  MemoryAccount::Hold own_stream_memory_;         // this runtime's own (ZeroMQ) stream's share
  zmq::context_t zctx_;
  std::unique_ptr<ZapHandler>
      zap_;  // CURVE's allow-list for this context's sockets (before them, after zctx_)
  std::unique_ptr<StreamIntake> intake_;               // its own stream's front door
  std::vector<std::unique_ptr<ReconWorker>> workers_;  // one per slice
  std::vector<std::unique_ptr<Sink>> sinks_;
  std::vector<std::unique_ptr<LatestFrame>> latest_;  // one per slice
  std::function<void(const FrameResult&)> on_frame_;
  std::atomic<bool> running_{false};
  std::int64_t t0_ns_ = 0;
  std::thread sink_thread_, reporter_;
  OnceLog once_;

  SessionMailboxes session_latest_;
  mutable std::mutex record_m_;  // guards recorder_ and recording_ (the switch, not the writing)
  std::unique_ptr<Recorder> recorder_;
  std::string recording_, last_recording_;

  mutable std::mutex sink_m_;  // guards sink_q_, sink_busy_ and sinks_stop_
  std::condition_variable sink_cv_;
  std::condition_variable sink_room_cv_;  // the queue has room again (SinkDelivery::Wait)
  static constexpr std::size_t kSinkQueue = 8;
  std::deque<std::shared_ptr<const FrameResult>> sink_q_;
  bool sinks_stop_ = false, sink_busy_ = false;

  std::mutex report_m_;  // the reporter's sleep
  std::condition_variable report_cv_;

  // The protocol servers (stream/session_server.hpp): last, stopped and destroyed before what their sessions
  // use.
  std::vector<std::unique_ptr<SessionServer>> servers_;
};

}  // namespace radstream
