#include "ingest/zmq/zmq_ingest.hpp"

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

ZmqIngest::ZmqIngest(zmq::context_t& ctx, const IngestParams& p, Metrics& metrics, bool device_ring,
                     int max_window, Recorder* recorder)
    : ZmqIngest(ctx, p, metrics,
                std::make_unique<StreamIntake>(p, metrics, device_ring, max_window, recorder)) {}

ZmqIngest::ZmqIngest(zmq::context_t& ctx, const IngestParams& p, Metrics& metrics, StreamIntake& intake)
    : p_(p), metrics_(metrics), sock_(ctx, socket_type(p.socket)), intake_(&intake) {
  open(ctx);
}

ZmqIngest::ZmqIngest(zmq::context_t& ctx, const IngestParams& p, Metrics& metrics,
                     std::unique_ptr<StreamIntake> own)
    : p_(p),
      metrics_(metrics),
      sock_(ctx, socket_type(p.socket)),
      owned_intake_(std::move(own)),
      intake_(owned_intake_.get()) {
  open(ctx);
}

void ZmqIngest::open(zmq::context_t& ctx) {
  p_.validate();
  limits_.max_samples = p_.max_samples;
  limits_.max_coils = p_.max_coils;
  // No message part may make ZeroMQ allocate more than the largest valid spoke (a peer that tries is
  // disconnected by ZeroMQ).
  const std::int64_t largest = std::max<std::int64_t>(std::int64_t(p_.max_samples) * p_.max_coils * 8,
                                                      std::int64_t(limits_.max_text_bytes)) +
                               4096;
  sock_.set(zmq::sockopt::maxmsgsize, largest);
  sock_.set(zmq::sockopt::rcvhwm, p_.rcvhwm);
  sock_.set(zmq::sockopt::rcvtimeo, 100);
  sock_.set(zmq::sockopt::linger, 0);
  if (p_.socket == ReceiveSocket::Sub) sock_.set(zmq::sockopt::subscribe, "");
  if (!p_.curve_key.empty()) make_curve_server(sock_, read_curve_key_file(p_.curve_key, true));
  // Connections come and go on the guard's monitor: bounded in number, counted, the first failures logged.
  guard_ = std::make_unique<ConnectionGuard>(ctx, sock_, p_.connections, "stream.endpoint", metrics_.peers);
  bind_or_connect(sock_, p_.endpoint, p_.bind, "stream.endpoint");
  endpoint_ = sock_.get(zmq::sockopt::last_endpoint);
}

std::string ZmqIngest::bound_endpoint() const {
  return endpoint_;
}

ZmqIngest::~ZmqIngest() {
  stop();
  guard_.reset();  // stops the socket's events before it closes
}

void ZmqIngest::start() {
  if (running_.exchange(true)) return;
  thread_ = std::thread([this] { run(); });
}

void ZmqIngest::stop() {
  if (running_.exchange(false) && thread_.joinable()) {
    intake_->stop();  // a writer waiting for the reconstruction
    thread_.join();
  }
  intake_->stop();
}

bool ZmqIngest::follows(std::uint32_t id, wire::MsgType type, std::int64_t now) {
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
  if (intake_->event_line_allowed(now))
    log::info("ingest: stream {} {}; now following stream {}", *followed_,
              followed_closed_ ? "closed"
                               : fmt::format("silent for {:.1f} s", double(now - followed_last_ns_) * 1e-9),
              id);
  followed_ = id;
  followed_last_ns_ = now;
  followed_closed_ = false;
  return true;
}

void ZmqIngest::run() {
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
  intake_->say_events_left_out();
}

void ZmqIngest::handle(std::span<const std::span<const std::byte>> parts) {
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
    case wire::MsgType::Header:
      intake_->header(d.msg);
      if (!held_.empty()) take_held_spokes(d.msg.env.stream_id);
      return;
    case wire::MsgType::Heartbeat:
      ++metrics_.heartbeats;
      return;
    case wire::MsgType::Text:
      ++metrics_.texts;
      if (intake_->event_line_allowed(monotonic_ns()))
        log::info("ingest: sender says: {}", log::printable_line(d.msg.text));
      return;
    case wire::MsgType::Close:
      intake_->close(d.msg);
      return;
    case wire::MsgType::Spoke:
      if (!intake_->has_stream())  // held for its stream's header (counted as no_header if none claims it)
        hold_early_spoke(d.msg.env.stream_id, parts);
      else
        intake_->spoke(d.msg, parts[1]);
      return;
  }
}

void ZmqIngest::hold_early_spoke(std::uint32_t stream_id, std::span<const std::span<const std::byte>> parts) {
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
  if (held_.empty() && intake_->event_line_allowed(monotonic_ns()))
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

void ZmqIngest::take_held_spokes(std::uint32_t header_stream_id) {
  if (!intake_->has_stream()) return;  // the header was refused: the spokes wait for a usable one
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

void ZmqIngest::drop_held_spokes(const std::string& why) {
  for (std::size_t i = 0; i < held_.size(); ++i) reject(wire::Reject::NoHeader, why);
  held_.clear();
  held_bytes_ = 0;
}

}  // namespace radstream
