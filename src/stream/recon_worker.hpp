// A reconstruction worker: one thread, one reconstruction chain (one per GPU later), fed by the ingest's
// spoke ring. It asks the FrameScheduler which frame is due, gathers the window (on the GPU straight from the
// device ring), reconstructs it and hands each FrameResult to `emit`. Settings change between frames: window
// and stride (atomics), the coil view (atomic), the reconstruction settings (their own lock). Thread policy:
// a frame's failure drops that frame (counted in frames_failed, logged once per kind); a configuration that
// fails waits for the next stream header; any other exception is counted, logged once, and the loop goes on.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "recon/recon_chain.hpp"
#include "recon/volume_chain.hpp"
#include "stream/frame_result.hpp"
#include "stream/metrics.hpp"
#include "stream/once_log.hpp"
#include "stream/spoke_source.hpp"

namespace radstream {

struct FrameParams;

class ReconWorker {
 public:
  using Emit = std::function<void(std::shared_ptr<const FrameResult>)>;
  // backend: resolved by the caller. frames: window, stride, framing and skip policy. slice: the stream's
  // slice this worker reconstructs (its own ring, window and warm-start state); gpu: the GPU its thread makes
  // current for its whole life (-1: the current one).
  ReconWorker(const FrameParams& frames, const ReconParams& recon, Backend backend, const Registry& registry,
              SpokeSource& source, Metrics& metrics, Emit emit, int slice = 0, int gpu = -1,
              std::string tag = {});
  ~ReconWorker();
  ReconWorker(const ReconWorker&) = delete;
  ReconWorker& operator=(const ReconWorker&) = delete;

  void start();
  void stop();  // finishes the frame in flight

  void set_window(int w) { window_ = w; }
  void set_stride(int s) { stride_ = s; }
  int window() const { return window_; }
  int stride() const { return stride_; }
  void set_coil_view(int coil) { coil_view_ = coil; }
  int coil_view() const { return coil_view_; }
  // Validated and resolved by the caller; applied before the next frame.
  void set_recon(const ReconParams& p, Backend backend);
  ReconParams recon() const;
  Backend backend() const { return backend_; }
  std::string last_error() const;
  // True when every frame due with the spokes of the stream in hand (the source's current generation) has
  // been made or dropped: false from a new stream header until the worker has configured for it and found
  // nothing due.
  bool drained() const;
  // The frame being made now, if any: the spoke its window ends at, and how long it has been in the making
  // (the status line says so while a slow frame holds everything else still).
  struct InFlight {
    std::uint64_t end = 0;
    double seconds = 0;
  };
  std::optional<InFlight> in_flight() const;
  int slice() const { return slice_; }
  int gpu() const { return gpu_; }

 private:
  void loop();
  void frames();
  bool make_frame(ReconChain& chain, SpokeRing& ring, std::uint64_t end, int W, Frame& host_frame,
                  FrameResult& out);
  // A stack of stars' volume from the window of host_frame's size ending at `end` (recon_worker_volume.cpp).
  bool make_volume(VolumeChain& volume, SpokeRing& ring, std::uint64_t end, Frame& host_frame,
                   FrameResult& out);
  void set_error(const std::string& e);
  std::string slice_prefix() const;  // "session n: slice k: " (the tag, and the slice when several)

  const FrameParams& fp_;
  int slice_, gpu_;
  std::string tag_;
  const Registry& registry_;
  SpokeSource& source_;
  Metrics& metrics_;
  Emit emit_;
  std::atomic<int> window_, stride_, coil_view_{-1};
  std::atomic<Backend> backend_;
  std::atomic<bool> running_{false}, drained_{false};
  std::atomic<std::uint64_t> seen_generation_{0};
  std::atomic<std::int64_t> in_flight_since_ns_{0};  // 0: no frame in the making
  std::atomic<std::uint64_t> in_flight_end_{0};      // the ingest generation drained_ speaks of
  // The ring's spoke count when drained_ was decided: spokes that came after it may make a frame due that the
  // worker has not seen yet (an MRD session closing at once would lose that frame to the next session).
  static constexpr std::uint64_t kAnyCount = ~std::uint64_t(0);  // drained whatever comes (no ring, no chain)
  std::atomic<std::uint64_t> checked_count_{kAnyCount};
  std::thread thread_;
  OnceLog once_;
  std::vector<cfloat> estimated_maps_;  // the worker thread's: a stage's own coil maps for the coil view

  mutable std::mutex settings_m_;  // guards recon_ and pending_
  ReconParams recon_;
  std::unique_ptr<std::pair<ReconParams, Backend>> pending_;
  mutable std::mutex error_m_;  // guards last_error_
  std::string last_error_;
  int test_delay_ms_ = 0;  // RADSTREAM_TEST_FRAME_DELAY_MS (tests only)
};

}  // namespace radstream
