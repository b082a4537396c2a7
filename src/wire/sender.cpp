#include "wire/sender.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_file.hpp"
#include "wire/curve.hpp"
#include "wire/endpoint.hpp"

namespace radstream {

zmq::socket_type socket_type(SendSocket s) {
  return s == SendSocket::Pub ? zmq::socket_type::pub : zmq::socket_type::push;
}

void bind_or_connect(zmq::socket_t& s, const std::string& endpoint, bool bind, const std::string& what) {
  try {
    if (is_ipv6_endpoint(endpoint)) s.set(zmq::sockopt::ipv6, 1);
    if (bind)
      s.bind(socket_endpoint(endpoint));
    else
      s.connect(socket_endpoint(endpoint));
  } catch (const zmq::error_t& e) {
    throw ConfigError(
        fmt::format("{}: cannot {} {}: {}", what, bind ? "bind" : "connect to", endpoint, e.what()));
  }
}

zmq::socket_t monitor_socket(zmq::context_t& ctx, zmq::socket_t& s, int events, const char* who) {
  // A name no other socket of this process uses (one at the same address as a socket just destroyed must not
  // meet that one's monitor endpoint, which the context releases asynchronously).
  std::random_device rd;
  const std::string mon = fmt::format("inproc://radstream-{}-monitor-{:08x}{:08x}", who, rd(), rd());
  if (zmq_socket_monitor(s.handle(), mon.c_str(), events) != 0)
    throw ConfigError(fmt::format("{}: cannot monitor the socket: {}", who, zmq_strerror(zmq_errno())));
  zmq::socket_t pair(ctx, zmq::socket_type::pair);
  pair.set(zmq::sockopt::linger, 0);
  pair.connect(mon);
  return pair;
}

std::uint32_t new_stream_id() {
  std::random_device rd;
  std::uint32_t id = 0;
  while (id == 0) id = rd();
  return id;
}

void wait_for_receiver(Sender& sender, const std::string& endpoint, double seconds) {
  if (seconds <= 0) return;
  if (!sender.wait_for_peer(std::chrono::milliseconds(long(seconds * 1000)))) {
    // Something listens there but no handshake completed: with CURVE that is a wrong server key (the receiver
    // cannot read this sender's hello and drops it), not a missing receiver.
    if (sender.reached_peer())
      throw IoError(
          fmt::format("a receiver is listening at {} but no handshake with it completed in {:.0f} s{}: {}",
                      endpoint, seconds, sender.handshake_failed() ? " (it failed)" : "",
                      sender.uses_curve()
                          ? "--curve-server-key is probably not that receiver's public key (its .pub from "
                            "radstream keygen), or the receiver does not use CURVE"
                          : "the receiver uses CURVE: give --curve-server-key and --curve-key"));
    throw IoError(
        fmt::format("no receiver at {} after {:.0f} s (start `radstream run` there first, or pass "
                    "--no-wait to send regardless)",
                    endpoint, seconds));
  }
  log::info("sender: a receiver is connected at {}", endpoint);
}

void SenderParams::validate() const {
  // A bound sender that other hosts can reach would hand them the spokes: CURVE, or an explicit --insecure.
  check_endpoint_exposure("sender endpoint", endpoint, bind, !curve_server_key.empty(), insecure,
                          "connect and receive the spokes (patient data)");
  if (sndhwm < 1) throw ConfigError(fmt::format("sndhwm {} must be >= 1", sndhwm));
  if (curve_server_key.empty() != curve_key.empty())
    throw ConfigError(
        "--curve-server-key (the receiver's .pub) and --curve-key (this sender's .key) go together");
}

Sender::Sender(zmq::context_t& ctx, const SenderParams& p, std::uint32_t stream_id)
    : sock_(ctx, socket_type(p.socket)), curve_(!p.curve_server_key.empty()), stream_id_(stream_id) {
  p.validate();
  sock_.set(zmq::sockopt::sndhwm, p.sndhwm);
  sock_.set(zmq::sockopt::linger, p.linger_ms);
  sock_.set(zmq::sockopt::sndtimeo, 100);  // a waiting send returns every 100 ms to poll the stop check
  monitor_ = monitor_socket(ctx, sock_,
                            ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                                ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                                ZMQ_EVENT_CONNECTED | ZMQ_EVENT_ACCEPTED,
                            "sender");
  if (!p.curve_server_key.empty())
    make_curve_client(sock_, read_curve_key_file(p.curve_key, true),
                      read_curve_key_file(p.curve_server_key, false).public_key);
  bind_or_connect(sock_, p.endpoint, p.bind, "sender endpoint");
}

bool Sender::wait_for_peer(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    monitor_.set(zmq::sockopt::rcvtimeo, int(std::min<long>(left.count(), 100)));  // poll the stop check
    zmq::message_t event;
    if (!monitor_.recv(event, zmq::recv_flags::none)) {
      if (stop_ && stop_()) {
        sock_.set(zmq::sockopt::linger, 0);
        closed_ = true;
        throw SendInterrupted("stopped while waiting for a receiver to connect");
      }
      continue;  // not yet: wait on until the timeout
    }
    std::uint16_t id = 0;
    if (event.size() >= 2) std::memcpy(&id, event.data(), 2);
    while (monitor_.get(zmq::sockopt::rcvmore)) {  // the endpoint frame
      zmq::message_t rest;
      if (!monitor_.recv(rest, zmq::recv_flags::none)) break;
    }
    if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) return true;
    if (id == ZMQ_EVENT_CONNECTED || id == ZMQ_EVENT_ACCEPTED) reached_ = true;
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL || id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
      handshake_failed_ = true;
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
      throw IoError(
          "the receiver refused this sender: its CURVE key (--curve-key) is not on the receiver's "
          "allow-list (stream.curve_clients)");
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL && !refused_logged_) {
      refused_logged_ = true;  // ZeroMQ retries; the wait goes on, and its time-out names the endpoint
      log::warn(
          "sender: the handshake with the receiver failed: one side uses CURVE and the other does not, or "
          "--curve-server-key is not the receiver's public key");
    }
  }
}

Sender::~Sender() {
  zmq_socket_monitor(sock_.handle(), nullptr, 0);  // stop the events before the sockets close
}

wire::Envelope Sender::control(wire::MsgType t) const {
  wire::Envelope e;
  e.type = std::uint16_t(t);
  e.sequence = seq_;
  e.stream_id = stream_id_;
  e.spoke_index = seq_;
  e.acquired_ns = monotonic_ns();
  e.sent_ns = e.acquired_ns;
  e.angle = std::numeric_limits<double>::quiet_NaN();
  return e;
}

void Sender::set_linger_ms(int ms) {
  sock_.set(zmq::sockopt::linger, ms);
}

void Sender::send_frame(zmq::message_t& m, zmq::send_flags f) {
  std::int64_t since = 0;
  while (!sock_.send(m, f)) {  // timed out: nobody takes it yet
    if (stop_ && stop_()) {
      sock_.set(zmq::sockopt::linger, 0);  // what is queued is dropped: the user asked to stop
      closed_ = true;
      throw SendInterrupted("stopped while waiting for a receiver to take the message");
    }
    const std::int64_t now = monotonic_ns();
    if (!since) since = now;
    if (stall_limit_s_ > 0 && seq_ > 0 && double(now - since) * 1e-9 > stall_limit_s_) {
      sock_.set(zmq::sockopt::linger, 0);
      closed_ = true;
      throw IoError(
          fmt::format("receiver at {} gone after {} spokes: it took nothing for {:.0f} s (--wait-s)",
                      endpoint_, seq_, stall_limit_s_));
    }
  }
}

void Sender::send_parts(const wire::Parts& parts) {
  for (std::size_t i = 0; i < parts.size(); ++i) {
    zmq::message_t m(parts[i].data(), parts[i].size());
    send_frame(m, i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

void Sender::send_header(const std::string& xml, std::uint32_t flags) {
  wire::Envelope e = control(wire::MsgType::Header);
  e.flags = flags;
  send_parts(wire::encode_text(e, xml));
}

void Sender::send_text(const std::string& text) {
  send_parts(wire::encode_text(control(wire::MsgType::Text), text));
}

void Sender::heartbeat() {
  send_parts(wire::encode_bare(control(wire::MsgType::Heartbeat)));
}

void Sender::send_spoke(const Spoke& s) {
  send_spoke(s.header, s);
}

void Sender::send_spoke(const SpokeHeader& header, const Spoke& s) {
  ++seq_;
  wire::Envelope e;
  e.type = std::uint16_t(wire::MsgType::Spoke);
  e.sequence = seq_;
  e.stream_id = stream_id_;
  e.spoke_index = header.spoke_index;
  e.acquired_ns = header.acquired_ns;
  e.sent_ns = monotonic_ns();
  e.angle = double(float(header.angle));
  SpokeHeader h = header;
  h.sent_ns = e.sent_ns;
  // user_int[6], [7]: stream id and sequence, so that a recording keeps the envelope.
  const auto acq = acquisition_header_bytes(h, s.samples, s.coils, s.traj.empty() ? 0 : 2, stream_id_,
                                            std::uint32_t(seq_));
  send_spoke_frames(e, acq, std::as_bytes(std::span(s.traj)), std::as_bytes(std::span(s.data)));
}

void Sender::send_spoke_frames(const wire::Envelope& e, std::span<const std::byte> acq_header,
                               std::span<const std::byte> traj, std::span<const std::byte> data) {
  seq_ = std::max<std::uint64_t>(seq_, e.sequence);  // the close message carries the last one sent
  const auto env = wire::encode_envelope(e);
  zmq::message_t f0(env.data(), env.size()), f1(acq_header.data(), acq_header.size());
  zmq::message_t f2(traj.data(), traj.size()), f3(data.data(), data.size());
  send_frame(f0, zmq::send_flags::sndmore);
  send_frame(f1, zmq::send_flags::sndmore);
  send_frame(f2, zmq::send_flags::sndmore);
  send_frame(f3, zmq::send_flags::none);
}

void Sender::close() {
  if (closed_) return;
  closed_ = true;
  send_parts(wire::encode_bare(control(wire::MsgType::Close)));
}

const char* delivery_note(SendSocket s) {
  return s == SendSocket::Push
             ? "push: no acknowledgement from the receiver; it never drops, and the receiver's spokes= "
               "counts what arrived"
             : "pub: no acknowledgement; a slow subscriber drops, and its missing= counts the gaps";
}

}  // namespace radstream
