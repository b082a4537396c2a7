// One parser for every ZeroMQ endpoint of every command (receivers, image publishers, senders): what it
// cannot classify it refuses, so that no spelling (ZeroMQ's "source;destination" form, an interface name, a
// host name) slips past the rule that a socket reachable from other hosts needs CURVE or an explicit
// --insecure.
#pragma once
#include <string>

namespace radstream {

struct Endpoint {
  std::string transport;  // tcp, ipc, inproc
  std::string host;       // tcp: 127.0.0.1, localhost, [::1], *, 0.0.0.0, a host or interface name
  std::string port;       // tcp: a number or * (any free port)
  bool local = false;     // only this machine can reach it (loopback tcp, ipc, inproc)
};

// Throws ConfigError naming `what` and the endpoint when it is not tcp://HOST:PORT, ipc://PATH or
// inproc://NAME (the source;destination form included).
Endpoint parse_endpoint(const std::string& endpoint, const std::string& what);

// The exposure rule for one socket: a bound endpoint that other hosts can reach needs CURVE (curve) or the
// user's explicit insecure (then it is logged as a warning); otherwise ConfigError naming `what`, the
// endpoint and what an attacker could do (`risk`, e.g. "inject spokes"). Parses the endpoint first (refusing
// what it cannot classify), bound or not.
// What a ZeroMQ socket is given for an endpoint parse_endpoint accepted: loopback spellings ZeroMQ's binder
// does not resolve made explicit (localhost -> 127.0.0.1; the short IPv4 forms such as 127.1 -> 127.0.0.1);
// anything else unchanged.
std::string socket_endpoint(const std::string& endpoint);
// True for tcp://[IPv6]:PORT, which a ZeroMQ socket binds or reaches only with its ipv6 option on.
bool is_ipv6_endpoint(const std::string& endpoint);

void check_endpoint_exposure(const std::string& what, const std::string& endpoint, bool bound, bool curve,
                             bool insecure, const std::string& risk);

}  // namespace radstream
