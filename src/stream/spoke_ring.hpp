// The ring of received spokes between the ingest thread (the only writer) and the frame assembler (the
// reader). Slots live in pinned host memory; with a device mirror, each spoke is uploaded to the GPU on its
// own stream the moment it is committed (not when a frame is due), into a [coils][slots][samples] layout, so
// that a window is one or two strided device copies per frame.
//
// Spokes are numbered by arrival (serial 0, 1, ...); serial k lives in slot k mod capacity. While the reader
// copies a window, the writer waits before overwriting any spoke of it (so nothing is read half-written);
// the capacity (window + margin) makes that wait rare. A reader that must see every frame (no skipping)
// also sets keep_from: the writer then waits rather than overwrite a spoke of a frame still to be made, so
// the stall reaches the sender through ZeroMQ's high-water marks and nothing is lost.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "core/buffer.hpp"
#include "core/frame.hpp"
#include "core/spoke.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/pinned_buffer.hpp"
#include "recon/coil_map_estimate.hpp"

namespace radstream {

struct RingSlotInfo {
  SpokeHeader head;
  std::uint64_t sequence = 0;
  std::int64_t arrival_ns = 0;
};

class SpokeRing {
 public:
  // Allocates capacity slots of samples x coils (pinned) and, with `device`, the GPU mirror and its upload
  // stream, on GPU `gpu` (-1: the current one; several GPUs: each slice's ring on its worker's GPU). Throws
  // ConfigError for absurd sizes, CudaError when the GPU memory is short.
  SpokeRing(int capacity, int samples, int coils, bool device, int gpu = -1);
  ~SpokeRing();
  SpokeRing(const SpokeRing&) = delete;
  SpokeRing& operator=(const SpokeRing&) = delete;

  int capacity() const { return capacity_; }
  int samples() const { return samples_; }
  int coils() const { return coils_; }
  bool on_device() const { return device_; }
  int gpu() const { return gpu_; }

  // Writer: the slot of the next spoke (waits while a reader holds or keeps the spoke it would overwrite).
  struct WriteSlot {
    float* traj;   // [samples][2]
    cfloat* data;  // [coils][samples]
  };
  WriteSlot begin_write();
  // Reader: spokes from `serial` on are still needed (kNone: none are); the writer will not overwrite them.
  // `next_end`: the spoke count at which the reader's next frame is due.
  static constexpr std::uint64_t kNone = ~std::uint64_t(0);
  void keep_from(std::uint64_t serial, std::uint64_t next_end = kNone);
  // Writer, before it drops this ring for a new stream: waits (at most `timeout`) until the reader has made
  // every frame the ring holds. False on time-out.
  bool wait_drained(std::chrono::milliseconds timeout);
  // The run is stopping: a writer no longer waits for kept spokes (nor wait_drained for the reader).
  void abort_waits();
  // Publishes the slot written since begin_write (and starts its upload).
  void commit(const RingSlotInfo& info);

  std::uint64_t count() const;  // spokes committed so far
  // Latest acquisition and arrival times (ns) and the first and last spoke index of a window.
  struct WindowTimes {
    std::int64_t acquired_ns = 0, arrival_ns = 0;
    std::uint64_t first_index = 0, last_index = 0;
  };
  RingSlotInfo info(std::uint64_t serial) const;

  // Reader: copies spokes [end - frame.geometry.spokes, end) into the frame (its data, trajectory, indices
  // and timestamps) and their times into `times` (taken while held, so never those of later spokes). False
  // when those spokes are no longer (or not yet) all in the ring.
  bool copy_window(std::uint64_t end, Frame& frame, WindowTimes& times);
  // Reader: of spokes [end - spokes, end), only the samples with |k| < radius, as coil_map_band keeps them
  // from the whole window (the same samples in the same order), without the whole window's copy: what a
  // coil-map refresh reads, a fifth of the window for ESPIRiT's default band. False as copy_window.
  bool copy_window_band(std::uint64_t end, int spokes, double radius, CoilMapBand& band);
  // Reader, device mirror: enqueues on `stream` the copy of spokes [end - spokes, end) into d_data
  // [coils][spokes][samples] and d_traj [spokes][samples][2] (after their uploads) and returns at once; the
  // spokes stay held until release_window(), which the caller calls once the stream is past the copies (the
  // host does not wait here).
  bool gather_window(std::uint64_t end, int spokes, cfloat* d_data, float* d_traj, gpu::StreamRef stream,
                     WindowTimes& times);
  void release_window();

 private:
  bool window_ok(std::uint64_t end, int spokes) const;  // under the lock
  void free_device() noexcept;
  void hold(std::uint64_t from);
  WindowTimes times_locked(std::uint64_t end, int n) const;

  int capacity_, samples_, coils_;
  bool device_;
  int gpu_;
  PinnedHostBuffer<cfloat> data_;  // [capacity][coils][samples]
  PinnedHostBuffer<float> traj_;   // [capacity][samples][2]
  std::vector<RingSlotInfo> info_;
  DeviceBuffer<cfloat> d_data_;  // [coils][capacity][samples]
  DeviceBuffer<float> d_traj_;   // [capacity][samples][2]
  std::unique_ptr<gpu::Stream> upload_stream_;
  std::vector<gpu::Event> uploaded_;  // one event per slot

  mutable std::mutex m_;
  std::condition_variable cv_;
  std::uint64_t count_ = 0;
  std::uint64_t held_from_ = kNone;  // first serial a reader holds, or none
  std::uint64_t keep_from_ = kNone;  // first serial a reader still needs, or none
  std::uint64_t next_end_ = kNone;   // spoke count at which the reader's next frame is due
  bool aborted_ = false;
};

// Holds a gathered window (gather_window) until it leaves scope: released once the caller is past the copies
// (its stream synchronized) or has thrown.
struct HeldWindow {
  SpokeRing& ring;
  bool on = false;
  ~HeldWindow() {
    if (on) ring.release_window();
  }
};

}  // namespace radstream
