// What a guarded listening socket's peers did (wire/connection_guard.hpp), and the limits it applies.
#pragma once
#include <atomic>
#include <cstdint>

namespace radstream {

struct ConnectionLimits {
  int max_connections = 256;         // accepted connections open at once, all peers together
  int max_per_address = 32;          // accepted connections open at once from one peer address
  double handshake_timeout_s = 5.0;  // a connection that has not completed its handshake by then is dropped
};

struct ConnectionCounts {
  std::atomic<std::uint64_t> connected{0};         // accepted or made
  std::atomic<std::uint64_t> disconnected{0};      // ended, for any reason
  std::atomic<std::uint64_t> handshake_failed{0};  // protocol error, time-out, or not authorised
  std::atomic<std::uint64_t> auth_failed{0};       // of those: not authorised (CURVE)
  std::atomic<std::uint64_t> refused_total{0};     // shut down: max_connections reached
  std::atomic<std::uint64_t> refused_address{0};   // shut down: max_per_address reached
  std::atomic<int> open{0};                        // accepted connections open now
};

}  // namespace radstream
