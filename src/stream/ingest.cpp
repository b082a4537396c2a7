#include "stream/ingest.hpp"

#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/trajectory.hpp"
#include "io/mrd_file.hpp"
#include "recon/memory_budget.hpp"
#include "stream/recorder.hpp"
#include "wire/curve.hpp"
#include "wire/endpoint.hpp"
#include "wire/sender.hpp"

namespace radstream {

namespace {
zmq::socket_type socket_type(ReceiveSocket s) {
  return s == ReceiveSocket::Sub ? zmq::socket_type::sub : zmq::socket_type::pull;
}
}  // namespace

void IngestParams::validate() const {
  parse_endpoint(endpoint, "stream.endpoint");
  if (memory_limit != "auto") parse_size(memory_limit, "stream.memory_limit");
  if (gradient_delay != "off" && gradient_delay != "auto")
    parse_gradient_delays(gradient_delay, "--gradient-delay");
}

Ingest::Ingest(zmq::context_t& ctx, const IngestParams& p, Metrics& metrics, bool device_ring, int max_window,
               Recorder* recorder)
    : p_(p),
      metrics_(metrics),
      device_ring_(device_ring),
      max_window_(max_window),
      recorder_(recorder),
      sock_(ctx, socket_type(p.socket)) {
  p_.validate();
  delays_ = std::make_unique<DelayCorrector>(p_.gradient_delay, p_.gradient_delay_every, metrics_);
  limits_.max_samples = p.max_samples;
  limits_.max_coils = p.max_coils;
  // No message part may make ZeroMQ allocate more than the largest valid spoke (a peer that tries is
  // disconnected by ZeroMQ).
  const std::int64_t largest = std::max<std::int64_t>(std::int64_t(p.max_samples) * p.max_coils * 8,
                                                      std::int64_t(limits_.max_text_bytes)) +
                               4096;
  sock_.set(zmq::sockopt::maxmsgsize, largest);
  sock_.set(zmq::sockopt::rcvhwm, p.rcvhwm);
  sock_.set(zmq::sockopt::rcvtimeo, 100);
  sock_.set(zmq::sockopt::linger, 0);
  if (p.socket == ReceiveSocket::Sub) sock_.set(zmq::sockopt::subscribe, "");
  if (!p.curve_key.empty()) make_curve_server(sock_, read_curve_key_file(p.curve_key, true));
  // Connections come and go on the guard's monitor: bounded in number, counted, the first failures logged.
  guard_ = std::make_unique<ConnectionGuard>(ctx, sock_, p.connections, "stream.endpoint", metrics_.peers);
  bind_or_connect(sock_, p.endpoint, p.bind, "stream.endpoint");
  endpoint_ = sock_.get(zmq::sockopt::last_endpoint);
}

void Ingest::set_recorder(Recorder* r) {
  std::string xml;
  {
    std::lock_guard lock(m_);
    xml = xml_;
  }
  std::lock_guard rl(rec_m_);
  recorder_ = r;
  if (r && !xml.empty()) r->start_file(xml);
}

std::string Ingest::bound_endpoint() const {
  return endpoint_;
}

Ingest::~Ingest() {
  stop();
  guard_.reset();  // stops the socket's events before it closes
}

void Ingest::start() {
  if (running_.exchange(true)) return;
  thread_ = std::thread([this] { run(); });
}

void Ingest::stop() {
  if (running_.exchange(false) && thread_.joinable()) {
    std::vector<std::shared_ptr<SpokeRing>> rings;
    {
      std::lock_guard lock(m_);
      rings = rings_;
    }
    for (const auto& ring : rings) ring->abort_waits();  // a writer waiting for the reconstruction
    thread_.join();
  }
  cv_.notify_all();
}

Ingest::State Ingest::state(int slice) const {
  std::lock_guard lock(m_);
  State s = state_;
  s.ring = std::size_t(slice) < rings_.size() ? rings_[std::size_t(slice)] : nullptr;
  return s;
}

void Ingest::wait_for(std::uint64_t generation, std::uint64_t count, std::chrono::milliseconds timeout,
                      int slice) const {
  std::unique_lock lock(m_);
  cv_.wait_for(lock, timeout, [&] {
    const SpokeRing* ring = std::size_t(slice) < rings_.size() ? rings_[std::size_t(slice)].get() : nullptr;
    return !running_ || state_.generation != generation || (ring && ring->count() >= count);
  });
}

void Ingest::reject(wire::Reject r, const std::string& detail) {
  metrics_.reject(r);
  if (!logged_[int(r)]) {
    logged_[int(r)] = true;
    log::warn("ingest: skipped a bad message ({}): {} (further ones of this kind are only counted)",
              wire::to_string(r), log::printable_line(detail, 300));
  }
}

bool Ingest::follows(std::uint32_t id, wire::MsgType type, std::int64_t now) {
  if (type == wire::MsgType::Heartbeat) return true;
  if (p_.accept_stream_id != 0 && id != std::uint32_t(p_.accept_stream_id)) {
    if (!followed_) followed_ = std::uint32_t(p_.accept_stream_id);
    return false;
  }
  if (!followed_) {
    if (type != wire::MsgType::Header) return true;  // (a spoke before any header is refused as no_header)
    followed_ = id;
    followed_last_ns_ = now;
    return true;
  }
  if (id == *followed_) {
    followed_last_ns_ = now;
    if (type == wire::MsgType::Close) followed_closed_ = true;
    if (type == wire::MsgType::Header) followed_closed_ = false;
    return true;
  }
  // Another stream: taken only when it starts (a header) after the followed one closed or fell silent.
  const bool silent = double(now - followed_last_ns_) * 1e-9 > p_.sender_timeout_s;
  if (type != wire::MsgType::Header || p_.accept_stream_id != 0 || !(followed_closed_ || silent))
    return false;
  if (events_.allow(now))
    log::info("ingest: stream {} {}; now following stream {}", *followed_,
              followed_closed_ ? "closed"
                               : fmt::format("silent for {:.1f} s", double(now - followed_last_ns_) * 1e-9),
              id);
  followed_ = id;
  followed_last_ns_ = now;
  followed_closed_ = false;
  return true;
}

bool Ingest::EventBudget::allow(std::int64_t now) {
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

void Ingest::run() {
  std::vector<zmq::message_t> msgs;
  std::vector<std::span<const std::byte>> parts;
  constexpr std::size_t kMaxParts = 8;
  while (running_) {
    zmq::message_t first;
    zmq::recv_result_t got;
    try {
      got = sock_.recv(first, zmq::recv_flags::none);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      log::error("ingest: receive failed: {}", e.what());
      continue;
    }
    const std::int64_t now = monotonic_ns();
    if (!got) {  // timeout: is the sender still there?
      const std::int64_t last = metrics_.last_message_ns.load();
      if (last && !metrics_.sender_lost && !metrics_.stream_ended &&
          double(now - last) * 1e-9 > p_.sender_timeout_s) {  // a clean close is not a lost sender
        metrics_.sender_lost = true;
        log::warn("ingest: no message for {:.1f} s (sender gone?); {} spokes so far",
                  double(now - last) * 1e-9, metrics_.spokes.load());
      }
      continue;
    }
    msgs.clear();
    msgs.push_back(std::move(first));
    bool too_many = false;
    while (sock_.get(zmq::sockopt::rcvmore)) {
      zmq::message_t more;
      if (!sock_.recv(more, zmq::recv_flags::none)) break;
      if (msgs.size() < kMaxParts)
        msgs.push_back(std::move(more));
      else
        too_many = true;
    }
    metrics_.stream_ended = false;
    if (metrics_.sender_lost.exchange(false))
      log::info("ingest: the sender is back after {:.1f} s",
                double(now - metrics_.last_message_ns.load()) * 1e-9);
    metrics_.last_message_ns = now;
    ++metrics_.messages;
    if (too_many) {
      reject(wire::Reject::PartCount, fmt::format("more than {} frames", kMaxParts));
      continue;
    }
    parts.clear();
    for (const auto& m : msgs) parts.emplace_back(static_cast<const std::byte*>(m.data()), m.size());
    try {  // nothing a message does escapes the thread: counted, logged once per kind, skipped
      handle(parts);
    } catch (const Error& e) {
      log::error("ingest: {}", e.what());
    } catch (const std::exception& e) {
      reject(wire::Reject::Limits, std::string("could not be handled: ") + e.what());
    }
  }
  if (!held_.empty()) drop_held_spokes("spokes held for a stream header that never came");
  if (events_.left_out > 0)
    log::info("ingest: {} more stream events since the last such line were not logged (at most 5 per 10 s)",
              events_.left_out);
}

void Ingest::handle(std::span<const std::span<const std::byte>> parts) {
  std::size_t bytes = 0;
  for (const auto& p : parts) bytes += p.size();
  metrics_.bytes += bytes;
  wire::DecodeResult d = wire::decode(parts, limits_);
  if (!d.ok) {
    reject(d.reason, d.detail);
    return;
  }
  const auto type = wire::MsgType(d.msg.env.type);
  if (!follows(d.msg.env.stream_id, type, monotonic_ns())) {
    reject(wire::Reject::ForeignStream,
           fmt::format("a message of stream {} while following stream {}", d.msg.env.stream_id, *followed_));
    return;
  }
  switch (type) {
    case wire::MsgType::Header: {
      ++metrics_.headers;
      {
        const bool recorded = (d.msg.env.flags & wire::kFlagRecordedClock) != 0;
        if (recorded && !metrics_.recorded_clock.exchange(true) && events_.allow(monotonic_ns()))
          log::info(
              "ingest: stream {} carries recorded timestamps (a verbatim replay): no latency is measured for "
              "it (replay --restamp gives this session's clock)",
              d.msg.env.stream_id);
        if (!recorded) metrics_.recorded_clock = false;
      }
      const bool continues =
          seq_.started() && seq_.stream_id() == d.msg.env.stream_id && d.msg.env.sequence >= seq_.last();
      seq_.header(d.msg.env.stream_id, d.msg.env.sequence);
      on_header(d.msg, continues);
      if (!held_.empty()) take_held_spokes(d.msg.env.stream_id);
      return;
    }
    case wire::MsgType::Heartbeat:
      ++metrics_.heartbeats;
      return;
    case wire::MsgType::Text:
      ++metrics_.texts;
      if (events_.allow(monotonic_ns()))
        log::info("ingest: sender says: {}", log::printable_line(d.msg.text));
      return;
    case wire::MsgType::Close:
      ++metrics_.closes;
      metrics_.stream_ended = true;
      seq_.close(d.msg.env.stream_id);
      if (events_.allow(monotonic_ns()))
        log::info(
            "ingest: stream {} closed by the sender after {} spokes ({} of them received, {} missing; "
            "{} received over the run)",
            d.msg.env.stream_id, d.msg.env.spoke_index,
            d.msg.env.stream_id == counted_stream_ ? metrics_.spokes.load() - stream_spokes0_ : 0,
            d.msg.env.stream_id == counted_stream_
                ? std::max(metrics_.missing.load(), stream_missing0_) - stream_missing0_
                : 0,
            metrics_.spokes.load());
      return;
    case wire::MsgType::Spoke:
      on_spoke(d.msg, parts);
      return;
  }
}

void Ingest::hold_early_spoke(std::uint32_t stream_id, std::span<const std::span<const std::byte>> parts) {
  if (!held_.empty() && stream_id != held_stream_)
    drop_held_spokes("held spokes of another stream (a new stream began before any header)");
  std::size_t bytes = 0;
  for (const auto& p : parts) bytes += p.size();
  if (held_bytes_ + bytes > kMaxHeldBytes) {
    reject(wire::Reject::NoHeader,
           fmt::format("a spoke arrived before any stream header, and {} MiB of such spokes are already held",
                       kMaxHeldBytes >> 20));
    return;
  }
  if (held_.empty() && events_.allow(monotonic_ns()))
    log::info(
        "ingest: spokes of stream {} before its header (started mid-stream?): held until the header comes",
        stream_id);
  held_stream_ = stream_id;
  std::vector<std::vector<std::byte>> copy;
  for (const auto& p : parts) copy.emplace_back(p.begin(), p.end());
  held_.push_back(std::move(copy));
  held_bytes_ += bytes;
  ++metrics_.held_before_header;
}

void Ingest::take_held_spokes(std::uint32_t header_stream_id) {
  {
    std::lock_guard lock(m_);
    if (rings_.empty()) return;  // the header was refused: the spokes wait for a usable one
  }
  if (header_stream_id != held_stream_) {
    drop_held_spokes("held spokes of a stream whose header never came");
    return;
  }
  auto held = std::move(held_);
  held_.clear();
  held_bytes_ = 0;
  std::vector<std::span<const std::byte>> spans;
  for (const auto& msg : held) {
    spans.clear();
    std::size_t bytes = 0;
    for (const auto& p : msg) {
      spans.emplace_back(p.data(), p.size());
      bytes += p.size();
    }
    metrics_.bytes -= bytes;  // counted when they arrived
    handle(spans);
  }
}

void Ingest::drop_held_spokes(const std::string& why) {
  for (std::size_t i = 0; i < held_.size(); ++i) reject(wire::Reject::NoHeader, why);
  held_.clear();
  held_bytes_ = 0;
}

void Ingest::on_header(const wire::Message& m, bool continues) {
  StreamHeader h;
  try {
    h = stream_header_from_xml(m.text, "stream header");
    if (h.coils == 0) throw IoError("stream header: no receiver channel count");
    h.validate();
  } catch (const Error& e) {
    reject(wire::Reject::BadText, e.what());
    return;
  }
  if (h.samples > limits_.max_samples || h.coils > limits_.max_coils) {
    reject(wire::Reject::Limits, fmt::format("stream header declares {} samples x {} coils (limits {} x {})",
                                             h.samples, h.coils, limits_.max_samples, limits_.max_coils));
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
          "ingest: the reconstruction did not finish the previous stream's frames within 10 s; moving on");
      break;
    }
  const int slices = p_.slices;
  const double slots = double(max_window_ + p_.ring_margin);
  const double ring_mib =
      slices * slots * h.samples * (double(h.coils) * sizeof(cfloat) + 2 * sizeof(float)) / 1048576.0;
  if (ring_mib > p_.max_ring_mib) {  // checked before anything is allocated (the GPU mirror doubles it)
    reject(
        wire::Reject::Limits,
        fmt::format("stream header of {} samples x {} coils needs {:.0f} MiB of spoke rings ({} slots x {} "
                    "slice(s)); stream.max_ring_mib is {}",
                    h.samples, h.coils, ring_mib, slots, slices, p_.max_ring_mib));
    return;
  }
  if (memory_check_) {  // everything the header implies, summed before anything is allocated
    if (const std::string why = memory_check_(h); !why.empty()) {
      reject(wire::Reject::Limits,
             fmt::format("stream header of matrix {}, {} samples x {} coils {}; set stream.memory_limit "
                         "(--memory-limit) to allow it",
                         h.matrix, h.samples, h.coils, why));
      return;
    }
  }
  std::vector<std::shared_ptr<SpokeRing>> rings;
  try {  // a header whose rings cannot be had is rejected; the stream in hand (if any) goes on
    for (int s = 0; s < slices; ++s) {
      const int gpu = std::size_t(s) < ring_gpus_.size() ? ring_gpus_[std::size_t(s)] : -1;
      rings.push_back(
          std::make_shared<SpokeRing>(max_window_ + p_.ring_margin, h.samples, h.coils, device_ring_, gpu));
      if (keep_all_) rings.back()->keep_from(0);
    }
  } catch (const std::exception& e) {
    reject(wire::Reject::Limits,
           fmt::format("no memory for {} spoke ring(s) of {} x {} samples x {} coils: {}", slices,
                       max_window_ + p_.ring_margin, h.samples, h.coils, e.what()));
    return;
  }
  delays_->new_stream(h.samples, h.coils);
  lock.lock();
  rings_ = std::move(rings);
  state_.header = h;
  ++state_.generation;
  xml_ = m.text;
  lock.unlock();
  cv_.notify_all();
  if (!first) ++metrics_.reconfigurations;
  if (first || events_.allow(monotonic_ns()))
    log::info("ingest: stream header {}: matrix {}, {} samples (readout os {}), {} coils{}", m.env.stream_id,
              h.matrix, h.samples, h.readout_os, h.coils,
              first           ? ""
              : same_geometry ? " (a new stream: its frames start over)"
                              : " (geometry changed: reconfiguring)");
  std::lock_guard rl(rec_m_);
  if (recorder_) recorder_->start_file(m.text);
}

void Ingest::on_spoke(const wire::Message& m, std::span<const std::span<const std::byte>> parts) {
  const std::span<const std::byte> acq_header = parts[1];
  std::shared_ptr<SpokeRing> ring;
  StreamHeader h;
  bool any = false;
  {
    std::lock_guard lock(m_);
    any = !rings_.empty();
    if (m.head.slice < rings_.size()) ring = rings_[m.head.slice];
    h = state_.header;
  }
  if (!any) {  // held for its stream's header (counted as no_header if none claims it)
    hold_early_spoke(m.env.stream_id, parts);
    return;
  }
  if (!ring) {
    reject(wire::Reject::SliceRange, fmt::format("spoke {} of slice {}; this run reconstructs slices 0..{} "
                                                 "(stream.slices {})",
                                                 m.head.spoke_index, m.head.slice, p_.slices - 1, p_.slices));
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
        "ingest: stream {} numbering starts afresh at sequence {} (a restarted sender, or a confirmed jump)",
        m.env.stream_id, m.env.sequence);
  if (verdict == V::Jump && events_.allow(monotonic_ns()))
    log::warn(
        "ingest: spoke sequence {} jumps ahead of {}; taken, numbering kept until {} consecutive confirm it",
        m.env.sequence, seq_.last(), 3);
  metrics_.missing = seq_.missing();
  metrics_.gaps = seq_.gaps();
  metrics_.streams = seq_.streams();
  if (verdict == V::Gap && seq_.gaps() == 1)
    log::warn("ingest: spokes missing before sequence {} (gaps are counted from now on)", m.env.sequence);
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
  cv_.notify_all();
}

}  // namespace radstream
