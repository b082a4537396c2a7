#include "wire/endpoint.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream {

namespace {
bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
// An IPv4 address in the forms inet_aton accepts with decimal parts (a.b.c.d, a.b.c with c 16 bits, a.b with
// b 24 bits, a alone 32 bits: 127.1 is 127.0.0.1), as its 32-bit value; false when it is not one.
bool ipv4_value(const std::string& h, std::uint32_t& value) {
  std::vector<std::uint64_t> parts;
  std::size_t i = 0;
  while (i <= h.size()) {
    const std::size_t dot = std::min(h.find('.', i), h.size());
    const std::string part = h.substr(i, dot - i);
    if (!all_digits(part) || part.size() > 10) return false;
    parts.push_back(std::stoull(part));
    i = dot + 1;
  }
  if (parts.empty() || parts.size() > 4) return false;
  const int last_bits = 32 - 8 * int(parts.size() - 1);
  for (std::size_t k = 0; k + 1 < parts.size(); ++k)
    if (parts[k] > 255) return false;
  if (parts.back() >= (std::uint64_t(1) << last_bits)) return false;
  std::uint64_t v = 0;
  for (std::size_t k = 0; k + 1 < parts.size(); ++k) v |= parts[k] << (24 - 8 * k);
  value = std::uint32_t(v | parts.back());
  return true;
}
bool loopback_ipv4(const std::string& h) {
  std::uint32_t v = 0;
  return ipv4_value(h, v) && (v >> 24) == 127;  // 127.0.0.0/8
}
// The IPv6 loopback however it is written: [::1], [0:0:0:0:0:0:0:1], [::0001] ...
bool loopback_ipv6(const std::string& v6) {
  in6_addr a{};
  return ::inet_pton(AF_INET6, v6.c_str(), &a) == 1 && IN6_IS_ADDR_LOOPBACK(&a);
}
}  // namespace

Endpoint parse_endpoint(const std::string& endpoint, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return ConfigError(fmt::format("{} '{}': {} (expected tcp://HOST:PORT, ipc://PATH or inproc://NAME)",
                                   what, endpoint, why));
  };
  Endpoint e;
  const std::size_t sep = endpoint.find("://");
  if (sep == std::string::npos) throw bad("no transport");
  e.transport = endpoint.substr(0, sep);
  const std::string rest = endpoint.substr(sep + 3);
  if (rest.empty()) throw bad("nothing after the transport");
  for (unsigned char c : rest)
    if (std::iscntrl(c) || std::isspace(c)) throw bad("a control or space character");
  if (e.transport == "ipc" || e.transport == "inproc") {
    e.local = true;
    return e;
  }
  if (e.transport != "tcp") throw bad("transport '" + e.transport + "' is not one radstream uses");
  if (rest.find(';') != std::string::npos)
    throw bad("the source;destination form is not accepted (it can bind every address)");
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0) throw bad("no HOST:PORT");
  e.host = rest.substr(0, colon);
  e.port = rest.substr(colon + 1);
  if (!(e.port == "*" ||
        (all_digits(e.port) && e.port.size() <= 5 && std::stoi(e.port) >= 1 && std::stoi(e.port) <= 65535)))
    throw bad("port '" + e.port + "' is outside 1..65535 (or *)");
  if (e.host.front() == '[') {
    if (e.host.back() != ']' || e.host.size() < 3) throw bad("an unclosed IPv6 address");
    const std::string v6 = e.host.substr(1, e.host.size() - 2);
    if (v6.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos)
      throw bad("a malformed IPv6 address");
    e.local = loopback_ipv6(v6);
    return e;
  }
  if (e.host.find_first_of("[]/@;") != std::string::npos) throw bad("a malformed host");
  e.local = e.host == "localhost" || loopback_ipv4(e.host);
  return e;
}

std::string socket_endpoint(const std::string& endpoint) {
  const std::size_t sep = endpoint.find("://");
  if (sep == std::string::npos || endpoint.compare(0, sep, "tcp") != 0) return endpoint;
  const std::string rest = endpoint.substr(sep + 3);
  const std::size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return endpoint;
  const std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
  std::uint32_t v = 0;
  if (host == "localhost") return "tcp://127.0.0.1:" + port;
  if (ipv4_value(host, v))
    return fmt::format("tcp://{}.{}.{}.{}:{}", v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255, port);
  return endpoint;
}

bool is_ipv6_endpoint(const std::string& endpoint) {
  const std::size_t sep = endpoint.find("://");
  return sep != std::string::npos && endpoint.compare(sep + 3, 1, "[") == 0;
}

void check_endpoint_exposure(const std::string& what, const std::string& endpoint, bool bound, bool curve,
                             bool insecure, const std::string& risk) {
  if (endpoint.empty()) return;
  const Endpoint e = parse_endpoint(endpoint, what);
  if (!bound || e.local || curve) return;
  if (!insecure)
    throw ConfigError(fmt::format(
        "{} {} is reachable from other hosts and CURVE is off: any of them could {}. Set the CURVE keys (see "
        "docs/security.md), or accept the risk with --insecure",
        what, endpoint, risk));
  log::warn("security: {} {} is open to other hosts without authentication (--insecure)", what, endpoint);
}

}  // namespace radstream
