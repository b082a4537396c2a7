// Bounds what peers can take from a listening ZeroMQ socket: connections in all, connections per peer
// address, and the time a connection may take to finish its ZeroMQ (or CURVE) handshake. A connection over a
// bound is shut down as soon as it is accepted (ZeroMQ then closes it and frees its descriptor); one that
// never completes its handshake is dropped by ZeroMQ after the handshake time-out. With these bounds a flood
// of connections that send nothing cannot exhaust the process's descriptors: the bounds are clamped to what
// the descriptor limit allows, keeping a reserve for the recorder, image files and outputs.
//
// The guard reads the socket's monitor events on a thread of its own, so that a flood is answered at once,
// whatever the socket's owner is doing; it keeps the counts the metrics report.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "wire/connection_counts.hpp"

namespace radstream {

// The descriptors this process may open (its soft limit), and how many each of `sockets` guarded sockets
// may use for connections when `reserve` are kept for everything else.
long descriptor_limit();
int connections_allowed(int wanted, int sockets, long reserve = 128);

class ConnectionGuard {
 public:
  // Sets the handshake time-out on `sock` (call before it binds) and starts watching it. `who` names the
  // socket in log lines ("stream.endpoint"); `sockets`: how many guarded sockets share the descriptors.
  ConnectionGuard(zmq::context_t& ctx, zmq::socket_t& sock, const ConnectionLimits& limits, const char* who,
                  ConnectionCounts& counts, int sockets = 2);
  // Stops watching. The socket's owner must not use `sock` concurrently (call after its loop has ended).
  ~ConnectionGuard();
  ConnectionGuard(const ConnectionGuard&) = delete;
  ConnectionGuard& operator=(const ConnectionGuard&) = delete;

  int max_connections() const { return max_total_; }

 private:
  void run();
  void on_event(std::uint16_t id, std::uint32_t value);

  zmq::socket_t& sock_;
  zmq::socket_t monitor_;
  std::string who_;
  bool curve_ = false;
  int max_total_ = 0, max_per_address_ = 0;
  ConnectionCounts& counts_;
  std::map<int, std::string> open_;         // descriptor -> peer address
  std::map<std::string, int> per_address_;  // peer address -> open connections
  bool logged_total_ = false, logged_address_ = false;
  int logged_handshakes_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace radstream
