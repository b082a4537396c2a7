// The sending side of the wire protocol (simulate, replay, and any test that plays a scanner): one ZeroMQ
// PUSH (lossless; blocks when the receiver falls behind) or PUB (a tap; drops at the high-water mark) socket.
// Spoke messages are numbered 1, 2, ...; control messages (header, heartbeat, text, close) carry the number
// of the last spoke sent, so a receiver's gap count is a count of lost spokes.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <stdexcept>
#include <string>
#include <zmq.hpp>

#include "core/enum_table.hpp"
#include "core/spoke.hpp"
#include "wire/wire.hpp"

namespace radstream {

enum class SendSocket { Push, Pub };
inline constexpr EnumTable<SendSocket, 2> kSendSockets{
    "send socket", {{{SendSocket::Push, "push"}, {SendSocket::Pub, "pub"}}}};

struct SenderParams {
  std::string endpoint = "tcp://127.0.0.1:5555";
  SendSocket socket = SendSocket::Push;  // push | pub
  bool bind = false;                     // connect by default (the receiver binds)
  int sndhwm = 1000;                     // messages queued before PUSH blocks / PUB drops
  int linger_ms = 2000;                  // how long close() waits for queued messages
  std::string curve_server_key;          // CURVE: the receiver's public key file (.pub); empty: no CURVE
  std::string curve_key;  // CURVE: this sender's key pair file (.key), on the receiver's allow-list
  bool insecure = false;  // allow binding a non-local endpoint without CURVE (warned)

  template <class V>
  void visit(V& v) {
    v.field("endpoint", endpoint, "ZeroMQ endpoint to send to");
    v.choice("socket", socket, kSendSockets, "push (lossless) or pub (a tap that may drop)");
    v.field("bind", bind, "bind the endpoint instead of connecting");
    v.field("sndhwm", sndhwm, 1, 1 << 20, "messages queued before PUSH blocks / PUB drops");
    v.field("linger_ms", linger_ms, 0, 600000, "how long closing waits for queued messages, ms");
    v.field("curve_server_key", curve_server_key,
            "CURVE: the receiver's public key file (.pub from radstream keygen)");
    v.field("curve_key", curve_key,
            "CURVE: this sender's key pair file (.key), on the receiver's allow-list");
    v.field(
        "insecure", insecure,
        "allow binding a non-local (or wildcard) endpoint without CURVE: any host could receive the spokes");
  }
  void validate() const;  // throws ConfigError naming the bad value
};

// Thrown by a send that was waiting (no receiver, or a stalled one at the high-water mark) when the stop
// check said stop: Ctrl-C and SIGTERM end a blocked sender within about 0.1 s.
struct SendInterrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Sender {
 public:
  Sender(zmq::context_t& ctx, const SenderParams& p, std::uint32_t stream_id);
  ~Sender();

  void send_header(const std::string& xml, std::uint32_t flags = 0);  // flags: wire::kFlag*
  void send_text(const std::string& text);
  void heartbeat();
  // Sends the spoke (its header's acquired_ns and index are used; sent_ns is stamped now). The angle travels
  // in float precision (as in the MRD header), so a recording replays to identical bytes.
  void send_spoke(const Spoke& s);
  // The same with another header (index, acquisition time...) for the payload of `s`: a precomputed spoke is
  // sent again without being copied.
  void send_spoke(const SpokeHeader& h, const Spoke& s);
  // Sends a spoke whose envelope and frames the caller made (replay of a recording), without copying them
  // first.
  void send_spoke_frames(const wire::Envelope& e, std::span<const std::byte> acq_header,
                         std::span<const std::byte> traj, std::span<const std::byte> data);
  // Sends pre-encoded frames as they are.
  void send_parts(const wire::Parts& parts);
  void close();  // the close message (carries the last spoke number); then the socket lingers <= linger_ms

  // Polled while a send waits (every 100 ms): true makes the send throw SendInterrupted, drops what is queued
  // (linger 0) and leaves the sender closed.
  void set_stop(std::function<bool()> stop) { stop_ = std::move(stop); }
  // A receiver that takes nothing for this long (a PUSH with its receiver gone: sends block) makes the send
  // throw IoError "receiver at E gone after N spokes" (0: wait for ever, the in-process demo).
  void set_stall_limit(double seconds, std::string endpoint) {
    stall_limit_s_ = seconds;
    endpoint_ = std::move(endpoint);
  }
  // How long closing waits for queued messages to leave (after an interrupt: briefly, so Ctrl-C is prompt).
  void set_linger_ms(int ms);

  // Waits until a receiver has connected (the ZeroMQ handshake with a peer is done). False on timeout.
  bool wait_for_peer(std::chrono::milliseconds timeout);
  // After a wait that timed out: whether a TCP connection was made (something listens there), whether a
  // handshake was seen to fail, and whether this sender uses CURVE (to name the likely cause).
  bool reached_peer() const { return reached_; }
  bool handshake_failed() const { return handshake_failed_; }
  bool uses_curve() const { return curve_; }
  std::uint64_t spokes_sent() const { return seq_; }
  std::uint32_t stream_id() const { return stream_id_; }
  // Messages that a PUB socket dropped are not visible here; PUSH never drops.

 private:
  wire::Envelope control(wire::MsgType t) const;
  void send_frame(zmq::message_t& m, zmq::send_flags f);  // waits in 100 ms steps, polling the stop check
  std::function<bool()> stop_;
  zmq::socket_t sock_;
  zmq::socket_t monitor_;  // this socket's connection events (handshakes with peers)
  bool refused_logged_ = false, reached_ = false, handshake_failed_ = false, curve_ = false;
  std::uint32_t stream_id_;
  std::uint64_t seq_ = 0;
  bool closed_ = false;
  double stall_limit_s_ = 0;
  std::string endpoint_;
};

std::uint32_t new_stream_id();  // random, never 0
// A sender's first step: wait up to `seconds` (> 0) for a receiver, else throw IoError saying so (a sender
// never reports success to nobody). seconds <= 0: do not wait.
void wait_for_receiver(Sender& sender, const std::string& endpoint, double seconds);
zmq::socket_type socket_type(SendSocket s);
// Watches socket `s`'s connection `events` (ZMQ_EVENT_*): returns the PAIR socket on which they arrive (two
// frames each). Call before bind/connect, so that the first connection's events count. Throws ConfigError.
zmq::socket_t monitor_socket(zmq::context_t& ctx, zmq::socket_t& s, int events, const char* who);

// What a sender can say about delivery when it is done: ZeroMQ PUSH and PUB carry no acknowledgement, so the
// count that arrived is the receiver's (its status line's spokes= and missing=); PUSH never drops, PUB may.
const char* delivery_note(SendSocket s);
// Binds or connects `s`; a failure is a ConfigError naming `what` (the option) and the endpoint.
void bind_or_connect(zmq::socket_t& s, const std::string& endpoint, bool bind, const std::string& what);

}  // namespace radstream
