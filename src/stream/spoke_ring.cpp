#include "stream/spoke_ring.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "core/error.hpp"
#include "gpu/device_memory.hpp"

namespace radstream {
namespace {

// The ring's GPU made current for a call (nothing when the ring follows the current device); in place, no
// allocation (commit() runs it for every spoke).
struct OnGpu {
  std::optional<gpu::DeviceGuard> guard;
  explicit OnGpu(int gpu) {
    if (gpu >= 0) guard.emplace(gpu);
  }
};

}  // namespace

SpokeRing::SpokeRing(int capacity, int samples, int coils, bool device, int gpu)
    : capacity_(capacity), samples_(samples), coils_(coils), device_(device), gpu_(device ? gpu : -1) {
  if (capacity < 2 || samples < 1 || coils < 1)
    throw ConfigError(fmt::format("spoke ring: capacity {}, samples {}, coils {} must all be positive",
                                  capacity, samples, coils));
  const std::size_t cap = std::size_t(capacity), S = std::size_t(samples), C = std::size_t(coils);
  data_ = PinnedHostBuffer<cfloat>(Extents{cap, C, S});
  traj_ = PinnedHostBuffer<float>(Extents{cap, S, 2});
  info_.resize(cap);
  if (device_) {
    OnGpu on(gpu_);
    try {
      d_data_ = DeviceBuffer<cfloat>(Extents{C, cap, S});
      d_traj_ = DeviceBuffer<float>(Extents{cap, S, 2});
      upload_stream_ = std::make_unique<gpu::Stream>();
      uploaded_.resize(cap);
    } catch (...) {
      free_device();
      throw;
    }
  }
}

SpokeRing::~SpokeRing() {
  free_device();
}

void SpokeRing::free_device() noexcept {
  std::optional<OnGpu> on;
  try {
    on.emplace(gpu_);
  } catch (const std::exception&) {  // the GPU is gone: free what can be freed where we are
  }
  if (upload_stream_) {
    try {
      upload_stream_->synchronize();
    } catch (const Error&) {
    }
  }
  uploaded_.clear();
  upload_stream_.reset();
  d_data_ = DeviceBuffer<cfloat>();
  d_traj_ = DeviceBuffer<float>();
}

SpokeRing::WriteSlot SpokeRing::begin_write() {
  std::unique_lock lock(m_);
  // The slot's previous spoke is count_ - capacity_: wait while a reader holds it or still needs it.
  const auto free_from = [&](std::uint64_t first) {
    return first == kNone || count_ < std::uint64_t(capacity_) || count_ - std::uint64_t(capacity_) < first;
  };
  // (A held window is released within a frame's copy; a kept one only as frames are made, so a stopping
  // run stops keeping.)
  cv_.wait(lock, [&] { return free_from(held_from_) && (aborted_ || free_from(keep_from_)); });
  const std::size_t slot = count_ % std::uint64_t(capacity_);
  lock.unlock();
  if (device_) uploaded_[slot].synchronize();  // the pinned slot's last upload is done
  return {traj_.data() + slot * samples_ * 2, data_.data() + slot * std::size_t(coils_) * samples_};
}

void SpokeRing::keep_from(std::uint64_t serial, std::uint64_t next_end) {
  {
    std::lock_guard lock(m_);
    keep_from_ = serial;
    next_end_ = next_end;
  }
  cv_.notify_all();
}

bool SpokeRing::wait_drained(std::chrono::milliseconds timeout) {
  std::unique_lock lock(m_);
  return cv_.wait_for(lock, timeout, [&] { return aborted_ || keep_from_ == kNone || count_ < next_end_; });
}

void SpokeRing::abort_waits() {
  {
    std::lock_guard lock(m_);
    aborted_ = true;
  }
  cv_.notify_all();
}

void SpokeRing::commit(const RingSlotInfo& info) {
  std::lock_guard lock(m_);
  const std::size_t slot = count_ % std::uint64_t(capacity_);
  info_[slot] = info;
  if (device_) {
    OnGpu on(gpu_);
    const std::size_t S = samples_, cap = capacity_;
    gpu::copy_2d_to_device(d_data_.data() + slot * S, cap * S * sizeof(cfloat),
                           data_.data() + slot * coils_ * S, S * sizeof(cfloat), S * sizeof(cfloat),
                           std::size_t(coils_), upload_stream_->get());
    gpu::copy_to_device(d_traj_.data() + slot * S * 2, traj_.data() + slot * S * 2, S * 2 * sizeof(float),
                        upload_stream_->get());
    uploaded_[slot].record(upload_stream_->get());
  }
  ++count_;
}

std::uint64_t SpokeRing::count() const {
  std::lock_guard lock(m_);
  return count_;
}

RingSlotInfo SpokeRing::info(std::uint64_t serial) const {
  std::lock_guard lock(m_);
  return info_[serial % std::uint64_t(capacity_)];
}

SpokeRing::WindowTimes SpokeRing::times_locked(std::uint64_t end, int n) const {
  WindowTimes t;
  t.first_index = info_[(end - n) % std::uint64_t(capacity_)].head.spoke_index;
  t.last_index = info_[(end - 1) % std::uint64_t(capacity_)].head.spoke_index;
  for (std::uint64_t k = end - n; k < end; ++k) {
    const RingSlotInfo& in = info_[k % std::uint64_t(capacity_)];
    t.acquired_ns = std::max(t.acquired_ns, in.head.acquired_ns);
    t.arrival_ns = std::max(t.arrival_ns, in.arrival_ns);
  }
  return t;
}

bool SpokeRing::window_ok(std::uint64_t end, int spokes) const {
  return spokes >= 1 && spokes <= capacity_ && end <= count_ && end >= std::uint64_t(spokes) &&
         count_ - (end - spokes) <= std::uint64_t(capacity_);
}

void SpokeRing::hold(std::uint64_t from) {
  held_from_ = from;
}

void SpokeRing::release_window() {
  {
    std::lock_guard lock(m_);
    held_from_ = kNone;
  }
  cv_.notify_all();
}

bool SpokeRing::copy_window(std::uint64_t end, Frame& frame, WindowTimes& times) {
  const Geometry& g = frame.geometry;
  if (g.samples != samples_ || g.coils != coils_)
    throw InputError(fmt::format("spoke ring holds {} samples x {} coils, the frame wants {} x {}", samples_,
                                 coils_, g.samples, g.coils));
  const int W = g.spokes;
  {
    std::lock_guard lock(m_);
    if (!window_ok(end, W)) return false;
    hold(end - W);
    times = times_locked(end, W);
  }
  const std::size_t S = samples_;
  frame.last_acquired_ns = 0;
  frame.last_arrival_ns = 0;
  for (int s = 0; s < W; ++s) {
    const std::uint64_t serial = end - W + s;
    const std::size_t slot = serial % std::uint64_t(capacity_);
    std::memcpy(frame.traj.data() + s * S * 2, traj_.data() + slot * S * 2, S * 2 * sizeof(float));
    for (int c = 0; c < coils_; ++c)
      std::memcpy(frame.data.data() + (std::size_t(c) * W + s) * S, data_.data() + (slot * coils_ + c) * S,
                  S * sizeof(cfloat));
    const RingSlotInfo& in = info_[slot];
    frame.spoke_index[s] = in.head.spoke_index;
    if (frame.partition.size() == std::size_t(W)) frame.partition[s] = in.head.partition;
    frame.last_acquired_ns = std::max(frame.last_acquired_ns, in.head.acquired_ns);
    frame.last_arrival_ns = std::max(frame.last_arrival_ns, in.arrival_ns);
  }
  release_window();
  return true;
}

bool SpokeRing::copy_window_band(std::uint64_t end, int W, double radius, CoilMapBand& band) {
  {
    std::lock_guard lock(m_);
    if (!window_ok(end, W)) return false;
    hold(end - W);
  }
  const std::size_t S = samples_;
  const auto slot_of = [&](int s) { return (end - W + std::uint64_t(s)) % std::uint64_t(capacity_); };
  std::vector<std::uint32_t> kept;  // s * S + i of each sample inside the band, in the window's order
  for (int s = 0; s < W; ++s) {
    const float* t = traj_.data() + slot_of(s) * S * 2;
    for (std::size_t i = 0; i < S; ++i)
      if (std::hypot(t[2 * i], t[2 * i + 1]) < radius) kept.push_back(std::uint32_t(std::size_t(s) * S + i));
  }
  const std::size_t n = std::max<std::size_t>(kept.size(), 1);
  band.data = HostBuffer<cfloat>(Extents{std::size_t(coils_), 1, n});
  band.traj = HostBuffer<float>(Extents{n, 2});
  for (std::size_t q = 0; q < kept.size(); ++q) {
    const std::size_t s = kept[q] / S, i = kept[q] % S, slot = slot_of(int(s));
    band.traj[2 * q] = traj_.data()[(slot * S + i) * 2];
    band.traj[2 * q + 1] = traj_.data()[(slot * S + i) * 2 + 1];
    for (int c = 0; c < coils_; ++c)
      band.data[std::size_t(c) * kept.size() + q] = data_.data()[(slot * coils_ + c) * S + i];
  }
  release_window();
  return true;
}

bool SpokeRing::gather_window(std::uint64_t end, int spokes, cfloat* d_data, float* d_traj,
                              gpu::StreamRef stream, WindowTimes& times) {
  if (!device_) throw InputError("spoke ring: gather_window needs the device mirror");
  {
    std::lock_guard lock(m_);
    if (!window_ok(end, spokes)) return false;
    hold(end - spokes);
    times = times_locked(end, spokes);
    // Uploads run in order on one stream: waiting for the newest spoke's waits for the whole window.
    uploaded_[(end - 1) % std::uint64_t(capacity_)].wait_on(stream);
  }
  const std::size_t S = samples_, cap = capacity_, W = std::size_t(spokes);
  std::size_t done = 0;
  std::uint64_t serial = end - spokes;
  while (done < W) {  // at most two runs (the window may wrap around the ring)
    const std::size_t slot = serial % cap;
    const std::size_t run = std::min(W - done, cap - slot);
    gpu::copy_2d_device(d_data + done * S, W * S * sizeof(cfloat), d_data_.data() + slot * S,
                        cap * S * sizeof(cfloat), run * S * sizeof(cfloat), std::size_t(coils_), stream);
    gpu::copy_device(d_traj + done * S * 2, d_traj_.data() + slot * S * 2, run * S * 2 * sizeof(float),
                     stream);
    done += run;
    serial += run;
  }
  return true;
}

}  // namespace radstream
