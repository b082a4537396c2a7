#include "ingest/mrd/mrd_server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/cuda_runtime.hpp"
#include "ingest/mrd/mrd_session.hpp"
#include "recon/backend.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/endpoint.hpp"
#include "wire/tcp_socket.hpp"

namespace radstream {

namespace {
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

MrdServer::MrdServer(const MrdServerParams& p, const IngestParams& stream, StreamRuntime& runtime)
    : p_(p), rt_(runtime), allow_(mrd_allow_list(p.allow)) {
  p_.max_samples = stream.max_samples;
  p_.max_coils = stream.max_coils;
  max_sessions_ =
      p_.max_sessions > 0
          ? p_.max_sessions
          : max_sessions_auto(resolve_backend(rt_.config().recon.backend).backend == Backend::Cuda);
  if (p_.pipe()) {
    // Images are binary: a terminal would show noise and could be sent control sequences.
    if (::isatty(STDOUT_FILENO))
      throw ConfigError(
          "--mrd-stdin writes the images as MRD messages to standard output, which is a terminal here: "
          "redirect it to a file or a pipe (> images.mrd)");
    if (::isatty(STDIN_FILENO))
      throw ConfigError(
          "--mrd-stdin reads an MRD stream from standard input, which is a terminal here: pipe one in "
          "(radstream replay FILE --mrd - | radstream run --mrd-stdin > images.mrd)");
    max_sessions_ = 1;
  } else {
    listener_ = std::make_unique<TcpListener>(p_.listen);
  }
  rt_.metrics().mrd.on = true;
}

MrdServer::~MrdServer() {
  stop();
}

std::string MrdServer::endpoint() const {
  return listener_ ? listener_->endpoint() : std::string("standard input");
}

void MrdServer::start() {
  if (p_.pipe()) {
    if (next_session_ == 0) start_pipe_session();
    return;
  }
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
  if (stdout_flags_ >= 0) {
    ::fcntl(STDOUT_FILENO, F_SETFL, stdout_flags_);  // as the shell gave it
    stdout_flags_ = -1;
  }
}

void MrdServer::start_pipe_session() {
  Fd in(::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3));
  Fd out(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
  if (!in || !out)
    throw IoError(
        fmt::format("--mrd-stdin: cannot take standard input and output: {}", std::strerror(errno)));
  // The session's images go out without waiting from the reconstruction's thread (what the pipe takes
  // now; the writer thread sends the rest), as on a socket: standard output is made non-blocking, and its
  // flags are put back when the server stops.
  stdout_flags_ = ::fcntl(STDOUT_FILENO, F_GETFL);
  if (stdout_flags_ >= 0) ::fcntl(STDOUT_FILENO, F_SETFL, stdout_flags_ | O_NONBLOCK);
  log::info("mrd: serving one MRD session on standard input, its images to standard output");
  ++rt_.metrics().mrd.sessions;
  auto s =
      std::make_shared<MrdSession>(p_, rt_, *this, std::move(in), "stdin", ++next_session_, std::move(out));
  {
    std::lock_guard l(m_);
    sessions_.push_back(s);
  }
  s->start();
}

bool MrdServer::finished() const {
  if (!p_.pipe()) return false;
  std::lock_guard l(m_);
  return next_session_ > 0 &&
         std::all_of(sessions_.begin(), sessions_.end(), [](const auto& s) { return s->ended(); });
}

std::string MrdServer::failure() const {
  std::lock_guard l(m_);
  for (const auto& s : sessions_)
    if (s->ended() && s->outcome() != "completed") return s->outcome();
  return {};
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
