#include "wire/endpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream {

namespace {
bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}
bool loopback_ipv4(const std::string& h) {
  // 127.0.0.0/8 written as four decimal parts
  int parts[4];
  char tail = 0;
  if (std::sscanf(h.c_str(), "%d.%d.%d.%d%c", &parts[0], &parts[1], &parts[2], &parts[3], &tail) != 4)
    return false;
  for (int p : parts)
    if (p < 0 || p > 255) return false;
  return parts[0] == 127 && std::count(h.begin(), h.end(), '.') == 3;
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
    e.local = v6 == "::1";
    return e;
  }
  if (e.host.find_first_of("[]/@;") != std::string::npos) throw bad("a malformed host");
  e.local = e.host == "localhost" || loopback_ipv4(e.host);
  return e;
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
