#include "stream/mrd_server.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/cuda_runtime.hpp"
#include "recon/backend.hpp"
#include "stream/mrd_session.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/endpoint.hpp"
#include "wire/tcp_socket.hpp"

namespace radstream {

namespace {
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}
bool loopback(const std::string& a) {
  return a == "::1" || a.rfind("127.", 0) == 0 || a == "::ffff:127.0.0.1";
}

// Tells a client it is not served (busy, or an address off the allow-list), then closes.
void refuse(int fd, const std::string& why) {
  std::vector<std::byte> b;
  mrd::append_text(b, mrd::kText, "ERR radstream: " + why);
  mrd::append_close(b);
  send_all(fd, b, 1.0);
}
}  // namespace

void MrdServerParams::validate(bool insecure) const {
  if (listen.empty()) return;
  const Endpoint e = parse_endpoint(listen, "--mrd-listen");
  if (e.transport != "tcp")
    throw ConfigError(fmt::format("--mrd-listen '{}': MRD clients speak TCP (tcp://HOST:PORT)", listen));
  if (e.local) return;
  if (!insecure || split_list(allow).empty())
    throw ConfigError(fmt::format(
        "--mrd-listen {} is reachable from other hosts, and the MRD protocol has neither encryption nor "
        "authentication: any of them could send data or read the images. Listen on 127.0.0.1 and tunnel (see "
        "docs/security.md), or give --insecure and the client addresses admitted with --mrd-allow",
        listen));
  log::warn("security: MRD server {} is open to {} without authentication (--insecure)", listen, allow);
}

int max_sessions_auto(bool cuda) {
  std::size_t n = 0;
  if (cuda) {
    n = gpu::free_memory(0) >> 30;  // a scanner-sized session needs well under a GiB (GPU 0: the default)
  } else {
    n = std::max(1u, std::thread::hardware_concurrency()) / 2;
  }
  return int(std::clamp<std::size_t>(n, 1, 16));
}

MrdServer::MrdServer(const MrdServerParams& p, const IngestParams& stream, StreamRuntime& runtime)
    : p_(p), rt_(runtime), allow_(split_list(p.allow)) {
  p_.max_samples = stream.max_samples;
  p_.max_coils = stream.max_coils;
  max_sessions_ =
      p_.max_sessions > 0
          ? p_.max_sessions
          : max_sessions_auto(resolve_backend(rt_.config().recon.backend).backend == Backend::Cuda);
  listener_ = std::make_unique<TcpListener>(p_.listen);
  rt_.metrics().mrd.on = true;
}

MrdServer::~MrdServer() {
  stop();
}

std::string MrdServer::endpoint() const {
  return listener_->endpoint();
}

void MrdServer::start() {
  if (thread_.joinable()) return;
  log::info("mrd: serving MRD clients on {} (at most {} sessions at once{}, each with its own pipeline)",
            endpoint(), max_sessions_, p_.max_sessions > 0 ? "" : ", from the memory budget");
  thread_ = std::thread([this] { accept_loop(); });
}

void MrdServer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  std::vector<std::shared_ptr<MrdSession>> all;
  {
    std::lock_guard l(m_);
    all.swap(sessions_);
  }
  for (auto& s : all) s->request_stop();
  all.clear();  // joins each
}

void MrdServer::reap() {
  std::vector<std::shared_ptr<MrdSession>> done;
  {
    std::lock_guard l(m_);
    for (auto it = sessions_.begin(); it != sessions_.end();)
      if ((*it)->ended()) {
        done.push_back(*it);
        it = sessions_.erase(it);
      } else {
        ++it;
      }
  }
  done.clear();  // joined outside the lock
}

bool MrdServer::claim_slot(std::string& why) {
  std::lock_guard l(m_);
  if (slots_ >= max_sessions_) {
    why = fmt::format("busy: {} session(s) in progress (at most {}, --mrd-max-sessions); try again later",
                      slots_, max_sessions_);
    return false;
  }
  ++slots_;
  return true;
}

void MrdServer::release_slot() {
  std::lock_guard l(m_);
  if (slots_ > 0) --slots_;
}

std::vector<std::string> MrdServer::session_lines() const {
  std::vector<std::string> out;
  std::lock_guard l(m_);
  for (const auto& s : sessions_)
    if (auto line = s->status_line(); !line.empty()) out.push_back(std::move(line));
  return out;
}

void MrdServer::accept_loop() {
  while (!stop_) {
    try {
      reap();
      std::string peer;
      Fd fd = listener_->accept(100, peer);
      if (!fd) continue;
      if (!allow_.empty() && !loopback(peer) &&
          std::find(allow_.begin(), allow_.end(), peer) == allow_.end()) {
        ++rt_.metrics().mrd.address_refused;
        log::warn("mrd: a client at {} is not on the allow-list (--mrd-allow); refused", peer);
        refuse(fd.get(), fmt::format("the address {} is not admitted", peer));
        continue;
      }
      // Connections still sending their header hold no slot, but they are bounded: each has its threads.
      std::size_t open = 0;
      {
        std::lock_guard l(m_);
        open = sessions_.size();
      }
      const std::size_t most = std::size_t(max_sessions_) + kMaxWaiting;
      if (open >= most) {
        ++rt_.metrics().mrd.busy_refused;
        log::warn("mrd: a client at {} came while {} connections are open; told busy", peer, open);
        refuse(fd.get(), fmt::format("busy: {} connections open (at most {}); try again later", open, most));
        continue;
      }
      ++rt_.metrics().mrd.sessions;
      auto s = std::make_shared<MrdSession>(p_, rt_, *this, std::move(fd), peer, ++next_session_);
      {
        std::lock_guard l(m_);
        sessions_.push_back(s);
      }
      s->start();
    } catch (const std::exception& e) {
      log::error("mrd: accepting a client failed: {}", e.what());
    }
  }
}

}  // namespace radstream
