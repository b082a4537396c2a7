// Plain TCP for the MRD protocol (io/mrd_protocol.hpp): a listener, a connector, a ByteSource over a
// connected socket with time limits, and a send with a deadline. POSIX sockets; every call checked; nothing
// here blocks without a limit, so a client that stalls or vanishes cannot hold a thread for ever.
#pragma once
#include <atomic>
#include <cstdint>
#include <span>
#include <string>

#include "io/mrd_protocol.hpp"

namespace radstream {

// An owned file descriptor (closed once).
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.fd_;
      o.fd_ = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

// A listening socket on tcp://HOST:PORT (PORT 0 or *: any free port). Throws ConfigError naming the endpoint
// when it cannot bind.
class TcpListener {
 public:
  explicit TcpListener(const std::string& endpoint);
  int port() const { return port_; }
  std::string endpoint() const;  // with the port actually bound
  // A connection within timeout_ms, or an empty Fd. `peer`: the client's address (no port).
  Fd accept(int timeout_ms, std::string& peer);

 private:
  Fd fd_;
  std::string host_;
  int port_ = 0;
};

// Connects to tcp://HOST:PORT within timeout_s. Throws IoError naming the endpoint and the reason.
Fd tcp_connect(const std::string& endpoint, double timeout_s);

// Reads from a connected socket (or a pipe): a message must arrive whole within message_timeout_s of its
// first byte (a client sending one byte a second is dropped), and the wait for a message's first byte ends
// after idle_timeout_s (0: never), or when `stop` is set (checked every 100 ms). Throws
// ProtocolError(Timeout, Io).
class SocketSource : public mrd::ByteSource {
 public:
  SocketSource(int fd, double message_timeout_s, double idle_timeout_s,
               const std::atomic<bool>* stop = nullptr)
      : fd_(fd), message_s_(message_timeout_s), idle_s_(idle_timeout_s), stop_(stop) {}
  std::size_t read_some(std::byte* p, std::size_t n) override;
  void begin_message() override;
  std::uint64_t bytes() const { return bytes_; }
  // A deadline for the next message's first byte (monotonic ns; 0: none) beside the idle timeout, said as
  // `why` when it passes: the owner decides what counts as progress (a server: the header, an acquisition).
  void set_deadline(std::int64_t ns, std::string why) {
    deadline_ns_ = ns;
    deadline_why_ = std::move(why);
  }

 private:
  int fd_;
  double message_s_, idle_s_;
  const std::atomic<bool>* stop_;
  bool in_message_ = false;
  std::int64_t message_start_ns_ = 0, idle_start_ns_ = 0;
  std::uint64_t bytes_ = 0;
  std::int64_t deadline_ns_ = 0;
  std::string deadline_why_;
};

// Sends every byte within timeout_s; false when the peer is gone or too slow (the caller drops it). Both
// sends take a socket, a pipe or a file (a pipe's owner makes it non-blocking for send_now's promise).
bool send_all(int fd, std::span<const std::byte> bytes, double timeout_s);
// Sends what the socket takes now, without waiting: the count (possibly 0), or -1 when the peer is gone.
long send_now(int fd, std::span<const std::byte> bytes);

}  // namespace radstream
