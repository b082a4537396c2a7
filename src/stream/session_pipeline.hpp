// One stream's own pipeline (DESIGN.md section 3, "Session"): its front door and spoke rings, one
// reconstruction worker per slice, its own settings (method, window, stride, frame policy), chain state,
// metrics and recording. Nothing one session does reaches another's: a client's config builds its own
// pipeline's settings and ends with it. The runtime opens one per protocol session
// (StreamRuntime::open_session); the session's adapter calls intake() with its stream's messages and receives
// each frame through `emit` (on the worker's thread).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "recon/backend.hpp"
#include "recon/recon_params.hpp"
#include "stream/ingest_params.hpp"
#include "stream/metrics.hpp"
#include "stream/recon_worker.hpp"
#include "stream/recorder.hpp"
#include "stream/run_config.hpp"
#include "stream/stream_intake.hpp"

namespace radstream {

class Registry;

// A session's reconstruction: resolved and validated by the runtime before the pipeline is made.
struct SessionSettings {
  FrameParams frames;
  ReconParams recon;
  Backend backend = Backend::Cpu;
  int gpu = -1;                  // the GPU its rings and workers use (-1: the current one)
  std::string tag;               // in its log lines: "session 3"
  std::string describe() const;  // "gridding, window 64, stride 16, every frame, cuda on GPU 0"
};

class SessionPipeline {
 public:
  SessionPipeline(const IngestParams& stream, SessionSettings settings, const Registry& registry,
                  std::unique_ptr<Recorder> recorder, ReconWorker::Emit emit);
  ~SessionPipeline();
  SessionPipeline(const SessionPipeline&) = delete;
  SessionPipeline& operator=(const SessionPipeline&) = delete;

  StreamIntake& intake() { return intake_; }
  Metrics& metrics() { return metrics_; }
  const SessionSettings& settings() const { return s_; }
  void start();
  // Ends the stream: its workers finish the frame in flight, its recording is written out. Idempotent.
  void stop();
  // True while every frame due with the spokes received has been made or dropped.
  bool drained() const;
  // Frames due with the spokes received (every slice), made, and failed or skipped.
  std::uint64_t frames_due() const;
  std::uint64_t frames_made() const { return metrics_.frames.load(); }
  std::uint64_t frames_lost() const { return metrics_.frames_failed.load() + metrics_.frames_skipped.load(); }
  std::string recording_status() const;

 private:
  SessionSettings s_;
  Metrics metrics_;
  std::unique_ptr<Recorder> recorder_;
  StreamIntake intake_;
  std::vector<std::unique_ptr<ReconWorker>> workers_;  // one per slice
  bool stopped_ = false;
  std::string recording_;
};

}  // namespace radstream
