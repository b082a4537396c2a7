#include "wire/connection_guard.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

#include "core/log.hpp"
#include "wire/sender.hpp"

namespace radstream {

namespace {

// The peer's address (without its port) of an accepted TCP connection; "" for anything else (ipc, a
// descriptor already closed).
std::string peer_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (!inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf)) return "";
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (!inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf)) return "";
  } else {
    return "local";
  }
  return buf;
}

}  // namespace

long descriptor_limit() {
  rlimit l{};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0 || l.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return long(l.rlim_cur);
}

int connections_allowed(int wanted, int sockets, long reserve) {
  const long share = (descriptor_limit() - reserve) / std::max(sockets, 1);
  return int(std::clamp<long>(share, 8, std::max(wanted, 8)));
}

ConnectionGuard::ConnectionGuard(zmq::context_t& ctx, zmq::socket_t& sock, const ConnectionLimits& limits,
                                 const char* who, ConnectionCounts& counts, int sockets)
    : sock_(sock), who_(who), counts_(counts) {
  max_total_ = std::min(limits.max_connections, connections_allowed(limits.max_connections, sockets));
  max_per_address_ = std::min(limits.max_per_address, max_total_);
  if (max_total_ < limits.max_connections)
    log::warn(
        "{}: at most {} connections at once, not {}: the descriptor limit is {} (raise it with ulimit -n)",
        who_, max_total_, limits.max_connections, descriptor_limit());
  sock_.set(zmq::sockopt::handshake_ivl, int(std::max(limits.handshake_timeout_s, 0.01) * 1000));
  curve_ = sock_.get(zmq::sockopt::mechanism) == ZMQ_CURVE;
  monitor_ = monitor_socket(ctx, sock_,
                            ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED |
                                ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                                ZMQ_EVENT_HANDSHAKE_FAILED_AUTH,
                            who);
  thread_ = std::thread([this] { run(); });
}

ConnectionGuard::~ConnectionGuard() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  zmq_socket_monitor(sock_.handle(), nullptr, 0);  // stop the events before the sockets close
}

void ConnectionGuard::run() {
  try {
    zmq::pollitem_t item{monitor_.handle(), 0, ZMQ_POLLIN, 0};
    while (!stop_) {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
      for (int k = 0; k < 256; ++k) {  // each event: two frames (event id + value, then an address)
        zmq::message_t ev, addr;
        if (!monitor_.recv(ev, zmq::recv_flags::dontwait)) break;
        if (monitor_.get(zmq::sockopt::rcvmore)) (void)monitor_.recv(addr, zmq::recv_flags::dontwait);
        if (ev.size() < 6) continue;
        std::uint16_t id = 0;
        std::uint32_t value = 0;
        std::memcpy(&id, ev.data(), sizeof id);
        std::memcpy(&value, static_cast<const char*>(ev.data()) + 2, sizeof value);
        on_event(id, value);
      }
    }
  } catch (const std::exception& e) {  // a guard that stops says so; the socket goes on unguarded
    if (!stop_) log::error("{}: the connection guard stopped: {}", who_, e.what());
  }
}

void ConnectionGuard::on_event(std::uint16_t id, std::uint32_t value) {
  const int fd = int(value);
  const auto forget = [&](int d) {
    const auto it = open_.find(d);
    if (it == open_.end()) return;
    if (--per_address_[it->second] <= 0) per_address_.erase(it->second);
    open_.erase(it);
  };
  if (id == ZMQ_EVENT_CONNECTED) {
    ++counts_.connected;
  } else if (id == ZMQ_EVENT_ACCEPTED) {
    ++counts_.connected;
    // A descriptor seen again before its end was read was closed and reused: the old connection is over.
    forget(fd);
    const std::string peer = peer_address(fd);
    if (peer.empty()) return;  // gone already (its end is on its way)
    const bool over_total = int(open_.size()) >= max_total_;
    const bool over_address = !over_total && per_address_[peer] >= max_per_address_;
    if (over_total || over_address) {
      // Shut down, not closed: ZeroMQ owns the descriptor, reads the end and closes it itself.
      ::shutdown(fd, SHUT_RDWR);
      if (per_address_[peer] == 0) per_address_.erase(peer);
      if (over_total) {
        ++counts_.refused_total;
        if (!logged_total_)
          log::warn(
              "{}: {} connections are open, the most allowed; further ones are shut down at once "
              "(counted: connections refused)",
              who_, max_total_);
        logged_total_ = true;
      } else {
        ++counts_.refused_address;
        if (!logged_address_)
          log::warn(
              "{}: {} connections are open from {}, the most allowed from one address; further ones "
              "are shut down at once (counted: connections refused)",
              who_, max_per_address_, peer);
        logged_address_ = true;
      }
      return;
    }
    open_[fd] = peer;
    ++per_address_[peer];
  } else if (id == ZMQ_EVENT_DISCONNECTED) {
    ++counts_.disconnected;
    forget(fd);
  } else {
    ++counts_.handshake_failed;
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) ++counts_.auth_failed;
    if (logged_handshakes_++ < 3)
      log::warn("{}: a peer failed the {} handshake and was dropped ({})", who_, curve_ ? "CURVE" : "ZeroMQ",
                id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH ? "not authorized" : "protocol error or time-out");
  }
  counts_.open = int(open_.size());
}

}  // namespace radstream
