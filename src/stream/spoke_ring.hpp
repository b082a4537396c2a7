// The ring of received spokes between the ingest thread (the only writer) and the frame assembler (the
// reader). Slots live in pinned host memory; with a device mirror, each spoke is uploaded to the GPU on its
// own stream the moment it is committed (not when a frame is due), into a [coils][slots][samples] layout, so
// that a window is one or two strided device copies per frame.
//
// Spokes are numbered by arrival (serial 0, 1, ...); serial k lives in slot k mod capacity. While the reader
// copies a window, the writer waits before overwriting any spoke of it (so nothing is read half-written);
// the capacity (window + margin) makes that wait rare.
#pragma once
#include <memory>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "core/buffer.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/pinned_buffer.hpp"
#include "core/frame.hpp"
#include "core/spoke.hpp"

namespace radstream {

struct RingSlotInfo {
  SpokeHeader head;
  std::uint64_t sequence = 0;
  std::int64_t arrival_ns = 0;
};

class SpokeRing {
 public:
  // Allocates capacity slots of samples x coils (pinned) and, with `device`, the GPU mirror and its upload
  // stream. Throws ConfigError for absurd sizes, CudaError when the GPU memory is short.
  SpokeRing(int capacity, int samples, int coils, bool device);
  ~SpokeRing();
  SpokeRing(const SpokeRing&) = delete;
  SpokeRing& operator=(const SpokeRing&) = delete;

  int capacity() const { return capacity_; }
  int samples() const { return samples_; }
  int coils() const { return coils_; }
  bool on_device() const { return device_; }

  // Writer: the slot of the next spoke (waits while a reader holds the spoke it would overwrite).
  struct WriteSlot {
    float* traj;   // [samples][2]
    cfloat* data;  // [coils][samples]
  };
  WriteSlot begin_write();
  // Publishes the slot written since begin_write (and starts its upload).
  void commit(const RingSlotInfo& info);

  std::uint64_t count() const;  // spokes committed so far
  // Latest acquisition and arrival times (ns) and the first and last spoke index of spokes [end - n, end).
  struct WindowTimes {
    std::int64_t acquired_ns = 0, arrival_ns = 0;
    std::uint64_t first_index = 0, last_index = 0;
  };
  WindowTimes window_times(std::uint64_t end, int n) const;
  RingSlotInfo info(std::uint64_t serial) const;

  // Reader: copies spokes [end - frame.geometry.spokes, end) into the frame (its data, trajectory, indices
  // and timestamps). False when those spokes are no longer (or not yet) all in the ring.
  bool copy_window(std::uint64_t end, Frame& frame);
  // Reader, device mirror: enqueues on `stream` the copy of spokes [end - spokes, end) into d_data
  // [coils][spokes][samples] and d_traj [spokes][samples][2] (after their uploads) and returns at once; the
  // spokes stay held until release_window(), which the caller calls once the stream is past the copies (the
  // host does not wait here).
  bool gather_window(std::uint64_t end, int spokes, cfloat* d_data, float* d_traj, gpu::StreamRef stream);
  void release_window();

 private:
  bool window_ok(std::uint64_t end, int spokes) const;  // under the lock
  void free_device() noexcept;
  void hold(std::uint64_t from);

  int capacity_, samples_, coils_;
  bool device_;
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
  std::uint64_t held_from_ = ~std::uint64_t(0);  // first serial a reader holds, or none
};

}  // namespace radstream
