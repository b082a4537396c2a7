#include "stream/stream_intake.hpp"

#include <cmath>
#include <cstring>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/trajectory.hpp"
#include "io/mrd_file.hpp"
#include "stream/recorder.hpp"

namespace radstream {

StreamIntake::StreamIntake(const IngestParams& p, Metrics& metrics, bool device_ring, int max_window,
                           Recorder* recorder, std::string tag)
    : p_(p),
      metrics_(metrics),
      device_ring_(device_ring),
      max_window_(max_window),
      tag_(std::move(tag)),
      recorder_(recorder) {
  delays_ = std::make_unique<DelayCorrector>(p_.gradient_delay, p_.gradient_delay_every, metrics_);
}

StreamIntake::~StreamIntake() {
  stop();
}

void StreamIntake::stop() {
  stopped_ = true;
  std::vector<std::shared_ptr<SpokeRing>> rings;
  {
    std::lock_guard lock(m_);
    rings = rings_;
  }
  for (const auto& ring : rings) ring->abort_waits();  // a writer waiting for the reconstruction
  cv_.notify_all();
}

void StreamIntake::set_recorder(Recorder* r) {
  std::string xml;
  {
    std::lock_guard lock(m_);
    xml = xml_;
  }
  std::lock_guard rl(rec_m_);
  recorder_ = r;
  if (r && !xml.empty()) r->start_file(xml);
}

bool StreamIntake::has_stream() const {
  std::lock_guard lock(m_);
  return !rings_.empty();
}

SpokeSource::State StreamIntake::state(int slice) const {
  std::lock_guard lock(m_);
  State s = state_;
  s.ring = std::size_t(slice) < rings_.size() ? rings_[std::size_t(slice)] : nullptr;
  return s;
}

void StreamIntake::wait_for(std::uint64_t generation, std::uint64_t count, std::chrono::milliseconds timeout,
                            int slice) const {
  std::unique_lock lock(m_);
  cv_.wait_for(lock, timeout, [&] {
    const SpokeRing* ring = std::size_t(slice) < rings_.size() ? rings_[std::size_t(slice)].get() : nullptr;
    return stopped_ || state_.generation != generation || (ring && ring->count() >= count);
  });
}

std::string StreamIntake::last_rejection() const {
  std::lock_guard lock(m_);
  return last_rejection_;
}

void StreamIntake::reject(wire::Reject r, const std::string& detail) {
  metrics_.reject(r);
  {
    std::lock_guard lock(m_);
    last_rejection_ = std::string(wire::to_string(r)) + ": " + log::printable_line(detail, 300);
  }
  if (!logged_[int(r)]) {
    logged_[int(r)] = true;
    log::warn("ingest: {}skipped a bad message ({}): {} (further ones of this kind are only counted)",
              prefix(), wire::to_string(r), log::printable_line(detail, 300));
  }
}

bool StreamIntake::EventBudget::allow(std::int64_t now) {
  if (now - window_start > 10'000'000'000) {
    if (left_out > 0)
      log::info("ingest: {} more stream events since the last such line were not logged (at most 5 per 10 s)",
                left_out);
    window_start = now;
    used = 0;
    left_out = 0;
  }
  if (used++ < 5) return true;
  ++left_out;
  return false;
}

void StreamIntake::say_events_left_out() {
  if (events_.left_out > 0)
    log::info("ingest: {}{} more stream events since the last such line were not logged (at most 5 per 10 s)",
              prefix(), events_.left_out);
  events_.left_out = 0;
}

void StreamIntake::header(const wire::Message& m) {
  ++metrics_.headers;
  const bool recorded = (m.env.flags & wire::kFlagRecordedClock) != 0;
  if (recorded && !metrics_.recorded_clock.exchange(true) && events_.allow(monotonic_ns()))
    log::info(
        "ingest: stream {} carries recorded timestamps (a verbatim replay): no latency is measured for it "
        "(replay --restamp gives this session's clock)",
        m.env.stream_id);
  if (!recorded) metrics_.recorded_clock = false;
  const bool continues =
      seq_.started() && seq_.stream_id() == m.env.stream_id && m.env.sequence >= seq_.last();
  seq_.header(m.env.stream_id, m.env.sequence);
  take_header(m, continues);
}

void StreamIntake::close(const wire::Message& m) {
  ++metrics_.closes;
  metrics_.stream_ended = true;
  seq_.close(m.env.stream_id);
  if (events_.allow(monotonic_ns()))
    log::info(
        "ingest: {}stream {} closed by the sender after {} spokes ({} of them received, {} missing; "
        "{} received over the run)",
        prefix(), m.env.stream_id, m.env.spoke_index,
        m.env.stream_id == counted_stream_ ? metrics_.spokes.load() - stream_spokes0_ : 0,
        m.env.stream_id == counted_stream_
            ? std::max(metrics_.missing.load(), stream_missing0_) - stream_missing0_
            : 0,
        metrics_.spokes.load());
}

bool StreamIntake::fits(const StreamHeader& h) {
  const double slots = double(ring_slots(h));
  const double ring_mib =
      p_.slices * slots * h.samples * (double(h.coils) * sizeof(cfloat) + 2 * sizeof(float)) / 1048576.0;
  if (ring_mib > p_.max_ring_mib) {  // checked before anything is allocated (the GPU mirror doubles it)
    reject(
        wire::Reject::Limits,
        fmt::format("stream header of {} samples x {} coils needs {:.0f} MiB of spoke rings ({} slots x {} "
                    "slice(s)); stream.max_ring_mib is {}",
                    h.samples, h.coils, ring_mib, slots, p_.slices, h.partitions, p_.max_ring_mib));
    return false;
  }
  if (memory_check_) {  // everything the header implies, summed before anything is allocated
    if (const std::string why = memory_check_(h); !why.empty()) {
      reject(wire::Reject::Limits,
             fmt::format("stream header of matrix {}, {} samples x {} coils {}; set stream.memory_limit "
                         "(--memory-limit) to allow it",
                         h.matrix, h.samples, h.coils, why));
      return false;
    }
  }
  return true;
}

// With the cuda backend the noise covariance is summed on the stream's GPU (slice 0's); the CPU when that
// cannot be had (said once).
NoisePrewhitener::MakeCovariance StreamIntake::covariance_maker() const {
  if (!device_ring_) return make_noise_covariance_cpu;
  const int gpu = ring_gpus_.empty() ? -1 : ring_gpus_[0];
  const std::string prefix = this->prefix();
  return [gpu, prefix](int coils) -> std::unique_ptr<NoiseCovariance> {
    try {
      return make_noise_covariance_cuda(coils, gpu);
    } catch (const std::exception& e) {
      log::warn("ingest: {}the noise covariance is summed on the CPU: {}", prefix, e.what());
      return make_noise_covariance_cpu(coils);
    }
  };
}

void StreamIntake::take_header(const wire::Message& m, bool continues) {
  StreamHeader h;
  try {
    h = stream_header_from_xml(m.text, "stream header");
    if (h.coils == 0) throw IoError("stream header: no receiver channel count");
    h.validate();
  } catch (const Error& e) {
    reject(wire::Reject::BadText, e.what());
    return;
  }
  if (h.samples > p_.max_samples || h.coils > p_.max_coils) {
    reject(wire::Reject::Limits, fmt::format("stream header declares {} samples x {} coils (limits {} x {})",
                                             h.samples, h.coils, p_.max_samples, p_.max_coils));
    return;
  }
  std::unique_lock lock(m_);
  const bool same_geometry = !rings_.empty() && h.samples == state_.header.samples &&
                             h.coils == state_.header.coils && h.matrix == state_.header.matrix;
  if (continues && same_geometry) {
    state_.header = h;
    return;
  }
  const bool first = rings_.empty();
  const std::vector<std::shared_ptr<SpokeRing>> old_rings = rings_;
  lock.unlock();
  // Every frame wanted: the stream in hand's last frames are made before its rings are dropped.
  for (const auto& old_ring : old_rings)
    if (keep_all_ && !old_ring->wait_drained(std::chrono::seconds(10))) {
      log::warn(
          "ingest: {}the reconstruction did not finish the previous stream's frames within 10 s; moving on",
          prefix());
      break;
    }
  if (!fits(h)) return;
  std::vector<std::shared_ptr<SpokeRing>> rings;
  try {  // a header whose rings cannot be had is rejected; the stream in hand (if any) goes on
    for (int s = 0; s < p_.slices; ++s) {
      const int gpu = std::size_t(s) < ring_gpus_.size() ? ring_gpus_[std::size_t(s)] : -1;
      rings.push_back(std::make_shared<SpokeRing>(ring_slots(h), h.samples, h.coils, device_ring_, gpu));
      if (keep_all_) rings.back()->keep_from(0);
    }
  } catch (const std::exception& e) {
    reject(wire::Reject::Limits,
           fmt::format("no memory for {} spoke ring(s) of {} x {} samples x {} coils: {}", p_.slices,
                       ring_slots(h), h.samples, h.coils, e.what()));
    return;
  }
  delays_->new_stream(h.samples, h.coils);
  conditioner_.new_stream(h.samples, h.coils, m.text, covariance_maker());
  noise_budget_told_ = false;
  lock.lock();
  rings_ = std::move(rings);
  state_.header = h;
  ++state_.generation;
  xml_ = m.text;
  lock.unlock();
  cv_.notify_all();
  if (!first) ++metrics_.reconfigurations;
  if (first || events_.allow(monotonic_ns()))
    log::info("ingest: {}stream header {}: matrix {}, {} samples (readout os {}), {} coils{}", prefix(),
              m.env.stream_id, h.matrix, h.samples, h.readout_os, h.coils,
              first           ? ""
              : same_geometry ? " (a new stream: its frames start over)"
                              : " (geometry changed: reconfiguring)");
  std::lock_guard rl(rec_m_);
  if (recorder_) recorder_->start_file(m.text);
}

SpokeConditioner::Kind StreamIntake::spoke(const wire::Message& in, std::span<const std::byte> acq_header) {
  using Kind = SpokeConditioner::Kind;
  wire::Message m = in;  // (spans; a spoke has no text)
  Kind kind = Kind::Imaging;
  try {
    kind = conditioner_.take(m, acq_header);
  } catch (const InputError& e) {
    reject(wire::Reject::GeometryMismatch, e.what());
    return Kind::Imaging;
  }
  if (auto note = conditioner_.take_note(); !note.text.empty()) {
    if (note.warning)
      log::warn("ingest: {}{}", prefix(), note.text);
    else
      log::info("ingest: {}{}", prefix(), note.text);
  }
  switch (kind) {
    case Kind::Noise:
      ++metrics_.noise_spokes;
      return kind;
    case Kind::NoiseOverBudget:
      ++metrics_.noise_spokes;
      if (!std::exchange(noise_budget_told_, true))
        log::warn(
            "ingest: {}more than {} noise samples; the further noise acquisitions are left out of the "
            "prewhitening",
            prefix(), SpokeConditioner::kMaxNoiseSamples);
      return kind;
    case Kind::NonImaging:
      ++metrics_.non_imaging;
      return kind;
    case Kind::Imaging:
      break;
  }
  take_spoke(m, acq_header);
  return kind;
}

void StreamIntake::take_spoke(const wire::Message& m, std::span<const std::byte> acq_header) {
  std::shared_ptr<SpokeRing> ring;
  StreamHeader h;
  {
    std::lock_guard lock(m_);
    if (m.head.slice < rings_.size()) ring = rings_[m.head.slice];
    h = state_.header;
  }
  if (!ring) {
    reject(wire::Reject::SliceRange, fmt::format("spoke {} of slice {}; this run reconstructs slices 0..{} "
                                                 "(stream.slices {})",
                                                 m.head.spoke_index, m.head.slice, p_.slices - 1, p_.slices));
    return;
  }
  if (m.head.partition >= h.partitions) {
    reject(wire::Reject::PartitionRange,
           fmt::format("spoke {} of partition {} (idx.kspace_encode_step_2); the stream header declares "
                       "partitions 0..{}",
                       m.head.spoke_index, m.head.partition, h.partitions - 1));
    return;
  }
  if (m.samples != h.samples || m.coils != h.coils) {
    reject(wire::Reject::GeometryMismatch,
           fmt::format("spoke of {} samples x {} coils in a stream of {} x {}", m.samples, m.coils, h.samples,
                       h.coils));
    return;
  }
  if (!wire::all_finite(m.data) || !wire::all_finite(m.traj)) {
    reject(wire::Reject::NonFinite, fmt::format("NaN or Inf in spoke {}", m.head.spoke_index));
    return;
  }
  if (!wire::trajectory_in_range(m.traj, m.traj_dims)) {  // a huge finite k would index far outside the grid
    reject(wire::Reject::TrajRange,
           fmt::format("spoke {} has a trajectory point outside |k| <= {} cycles/pixel", m.head.spoke_index,
                       wire::kMaxTrajectoryK));
    return;
  }
  // Only a spoke that passed every check consumes its sequence number.
  const auto verdict = seq_.see(m.env.stream_id, m.env.sequence);
  using V = SequenceTracker::Verdict;
  if ((verdict == V::First || verdict == V::NewStream) && m.env.stream_id != counted_stream_) {
    counted_stream_ = m.env.stream_id;
    stream_spokes0_ = metrics_.spokes.load();
    stream_missing0_ = seq_.missing();
  }
  if (verdict == V::Duplicate) {
    reject(wire::Reject::Duplicate, fmt::format("spoke sequence {} seen before", m.env.sequence));
    return;
  }
  if (verdict == V::NewStream && events_.allow(monotonic_ns()))
    log::info(
        "ingest: {}stream {} numbering starts afresh at sequence {} (a restarted sender, or a confirmed "
        "jump)",
        prefix(), m.env.stream_id, m.env.sequence);
  if (verdict == V::Jump && events_.allow(monotonic_ns()))
    log::warn(
        "ingest: {}spoke sequence {} jumps ahead of {}; taken, numbering kept until {} consecutive confirm "
        "it",
        prefix(), m.env.sequence, seq_.last(), 3);
  metrics_.missing = seq_.missing();
  metrics_.gaps = seq_.gaps();
  metrics_.streams = seq_.streams();
  if (verdict == V::Gap && seq_.gaps() == 1)
    log::warn("ingest: {}spokes missing before sequence {} (gaps are counted from now on)", prefix(),
              m.env.sequence);
  {
    std::lock_guard rl(rec_m_);
    if (recorder_) recorder_->push(acq_header, m.traj, m.data);
  }
  if (verdict == V::Late) {
    reject(wire::Reject::Late,
           fmt::format("spoke sequence {} arrived after {}", m.env.sequence, seq_.last()));
    return;
  }
  if (m.traj_dims < 2 && !std::isfinite(m.head.angle) && !h.angles_unknown.empty()) {
    reject(wire::Reject::NoAngle,
           "the spoke carries no trajectory and its angle cannot be known from " + h.angles_unknown);
    return;
  }
  const int S = m.samples;
  SpokeRing::WriteSlot slot = ring->begin_write();
  std::memcpy(slot.data, m.data.data(), m.data.size());
  RingSlotInfo info;
  info.head = m.head;
  info.sequence = m.env.sequence;
  if (m.traj_dims >= 2) {
    const std::byte* t = m.traj.data();
    for (int n = 0; n < S; ++n)
      std::memcpy(slot.traj + 2 * n, t + std::size_t(n) * m.traj_dims * sizeof(float), 2 * sizeof(float));
    if (!std::isfinite(info.head.angle))
      info.head.angle = std::atan2(double(slot.traj[2 * (S - 1) + 1] - slot.traj[1]),
                                   double(slot.traj[2 * (S - 1)] - slot.traj[0]));
  } else {
    if (!std::isfinite(info.head.angle)) info.head.angle = h.angles.angle(std::int64_t(m.head.spoke_index));
    spoke_coordinates(info.head.angle, S, std::span<float>(slot.traj, 2 * std::size_t(S)));
  }
  if (delays_->active()) delays_->correct(slot.traj, slot.data);  // before the ring's device mirror takes it
  info.arrival_ns = monotonic_ns();
  ring->commit(info);
  ++metrics_.spokes;
  ++taken_;
  cv_.notify_all();
}

}  // namespace radstream
