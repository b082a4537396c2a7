#include "wire/tcp_socket.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "wire/endpoint.hpp"

namespace radstream {

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

namespace {

std::string host_of(const Endpoint& e) {
  std::string h = e.host;
  if (h == "*") return "0.0.0.0";
  if (h == "localhost") return "127.0.0.1";
  if (h.size() > 2 && h.front() == '[') return h.substr(1, h.size() - 2);
  return h;
}

// getaddrinfo for a numeric or named host; throws `Err` with the endpoint named.
template <class Err>
addrinfo* resolve(const std::string& endpoint, const Endpoint& e, bool passive) {
  if (e.transport != "tcp") throw Err(fmt::format("'{}' is not a tcp://HOST:PORT endpoint", endpoint));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port = e.port == "*" ? "0" : e.port;
  const int rc = ::getaddrinfo(host_of(e).c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || !res) throw Err(fmt::format("{}: cannot resolve the host: {}", endpoint, gai_strerror(rc)));
  return res;
}

void set_nonblocking(int fd) {
  const int fl = ::fcntl(fd, F_GETFL, 0);
  if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
    throw IoError(fmt::format("fcntl(O_NONBLOCK) failed: {}", std::strerror(errno)));
}

std::string peer_address(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof buf);
  else if (ss.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof buf);
  return buf;
}

}  // namespace

TcpListener::TcpListener(const std::string& endpoint) {
  const Endpoint e = parse_endpoint(endpoint, "MRD listen endpoint");
  host_ = e.host;
  addrinfo* res = resolve<ConfigError>(endpoint, e, true);
  std::string why = "no address";
  for (addrinfo* a = res; a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) {
      why = std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), 16) != 0) {
      why = std::strerror(errno);
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) == 0)
      port_ = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(ss).sin6_port
                                             : reinterpret_cast<sockaddr_in&>(ss).sin_port);
    set_nonblocking(fd.get());
    fd_ = std::move(fd);
    break;
  }
  ::freeaddrinfo(res);
  if (!fd_) throw ConfigError(fmt::format("MRD listen endpoint {}: cannot listen: {}", endpoint, why));
}

std::string TcpListener::endpoint() const {
  return fmt::format("tcp://{}:{}", host_, port_);
}

Fd TcpListener::accept(int timeout_ms, std::string& peer) {
  pollfd p{fd_.get(), POLLIN, 0};
  const int rc = ::poll(&p, 1, timeout_ms);
  if (rc <= 0 || !(p.revents & POLLIN)) return {};
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  Fd c(::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC));
  if (!c) return {};  // EAGAIN, a connection reset before accept, EMFILE: the caller tries again
  peer = peer_address(ss);
  const int one = 1;
  ::setsockopt(c.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return c;
}

Fd tcp_connect(const std::string& endpoint, double timeout_s) {
  const Endpoint e = parse_endpoint(endpoint, "MRD server endpoint");
  if (e.port == "*") throw ConfigError(fmt::format("MRD server endpoint {}: give the port", endpoint));
  addrinfo* res = resolve<IoError>(endpoint, e, false);
  std::string why = "no address";
  Fd out;
  for (addrinfo* a = res; a && !out; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd) continue;
    set_nonblocking(fd.get());
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
      why = std::strerror(errno);
      continue;
    }
    pollfd p{fd.get(), POLLOUT, 0};
    if (::poll(&p, 1, int(timeout_s * 1000)) <= 0) {
      why = "timed out";
      continue;
    }
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      why = std::strerror(err);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    out = std::move(fd);
  }
  ::freeaddrinfo(res);
  if (!out) throw IoError(fmt::format("cannot connect to the MRD server at {}: {}", endpoint, why));
  return out;
}

void SocketSource::begin_message() {
  in_message_ = false;
  idle_start_ns_ = monotonic_ns();
}

std::size_t SocketSource::read_some(std::byte* p, std::size_t n) {
  for (;;) {
    const std::int64_t now = monotonic_ns();
    int wait_ms = 100;
    if (in_message_) {
      const double left = message_s_ - double(now - message_start_ns_) * 1e-9;
      if (left <= 0)
        throw mrd::ProtocolError(mrd::Fault::Timeout,
                                 fmt::format("a message did not arrive whole within {} s of its first byte "
                                             "(a stalled client)",
                                             message_s_));
      wait_ms = std::min(wait_ms, std::max(1, int(left * 1000)));
    } else if (idle_s_ > 0 && double(now - idle_start_ns_) * 1e-9 > idle_s_) {
      throw mrd::ProtocolError(mrd::Fault::Timeout,
                               fmt::format("no message for {} s (a vanished client)", idle_s_));
    } else if (deadline_ns_ > 0 && now > deadline_ns_) {
      throw mrd::ProtocolError(mrd::Fault::Timeout, deadline_why_);
    }
    if (stop_ && stop_->load()) throw mrd::ProtocolError(mrd::Fault::Io, "the server is stopping");
    pollfd pf{fd_, POLLIN, 0};
    const int rc = ::poll(&pf, 1, wait_ms);
    if (rc < 0 && errno != EINTR) throw mrd::ProtocolError(mrd::Fault::Io, std::strerror(errno));
    if (rc <= 0) continue;
    const ssize_t k = ::read(fd_, p, n);  // (a socket or a pipe: `run --mrd-stdin`)
    if (k < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) continue;
      throw mrd::ProtocolError(mrd::Fault::Io,
                               fmt::format("the connection failed: {}", std::strerror(errno)));
    }
    if (k == 0) return 0;
    if (!in_message_) {
      in_message_ = true;
      message_start_ns_ = monotonic_ns();
    }
    bytes_ += std::uint64_t(k);
    return std::size_t(k);
  }
}

long send_now(int fd, std::span<const std::byte> bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    ssize_t k = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    // A pipe or a file (`run --mrd-stdin`'s standard output, made non-blocking by its owner; SIGPIPE is
    // ignored by the program, so a reader that went away is EPIPE here).
    if (k < 0 && errno == ENOTSOCK) k = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (k > 0) {
      off += std::size_t(k);
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    break;  // the socket's buffer is full: the rest later
  }
  return long(off);
}

bool send_all(int fd, std::span<const std::byte> bytes, double timeout_s) {
  const std::int64_t deadline = monotonic_ns() + std::int64_t(timeout_s * 1e9);
  std::size_t off = 0;
  for (;;) {
    const long k = send_now(fd, bytes.subspan(off));
    if (k < 0) return false;
    off += std::size_t(k);
    if (off >= bytes.size()) return true;
    const std::int64_t left_ms = (deadline - monotonic_ns()) / 1000000;
    if (left_ms <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, int(std::min<std::int64_t>(left_ms, 100))) < 0 && errno != EINTR) return false;
  }
}

}  // namespace radstream
