#include "stream/recorder.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream {

namespace {

// The file for the n-th geometry of a recording: NAME.h5, NAME_2.h5, ...
std::string nth_file(const std::string& path, int n) {
  return n == 1 ? path : path.substr(0, path.size() - 3) + "_" + std::to_string(n) + ".h5";
}

}  // namespace

Recorder::Recorder(const std::string& path, std::size_t max_queue_bytes, Metrics& metrics, bool overwrite)
    : path_(path), overwrite_(overwrite), max_bytes_(max_queue_bytes), metrics_(metrics) {
  namespace fs = std::filesystem;
  if (path.size() < 4 || path.substr(path.size() - 3) != ".h5")
    throw ConfigError("record: '" + path + "' must be an .h5 file name");
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError("record: cannot create the folder " + dir.string() + " for " + path + ": " + ec.message());
  if (::access(dir.c_str(), W_OK) != 0)
    throw IoError("record: the folder " + dir.string() + " is not writable (" + std::strerror(errno) + ")");
  if (!overwrite && fs::exists(path))
    throw IoError("record: " + path + " exists; choose another name or allow overwriting (--overwrite, " +
                  "sinks.record_overwrite: true)");
  // Prove now, before any spoke, that the file can be made (a folder's permission bits do not: /proc, a
  // read-only mount, a full disk); the real file is written when the stream's header comes.
  if (!fs::exists(path)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) throw IoError("record: cannot create " + path + " (" + std::strerror(errno) + ")");
    ::close(fd);
    fs::remove(path, ec);
  } else if (::access(path.c_str(), W_OK) != 0) {
    throw IoError("record: " + path + " is not writable (" + std::strerror(errno) + ")");
  }
  thread_ = std::thread([this] { run(); });
}

std::size_t Recorder::failures() const {
  std::lock_guard lock(m_);
  return failures_;
}

std::string Recorder::status() const {
  std::lock_guard lock(m_);
  const std::string where = current_.empty() ? path_ : current_;
  if (failures_)
    return fmt::format("FAILED: {} write(s) failed after {} spokes in {} (first: {})", failures_, written_, where,
                       first_error_);
  return fmt::format("{} spokes in {}", written_, where);
}

Recorder::~Recorder() {
  stop();
}

void Recorder::stop() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::size_t Recorder::written() const {
  std::lock_guard lock(m_);
  return written_;
}

std::string Recorder::current_path() const {
  std::lock_guard lock(m_);
  return current_;
}

void Recorder::start_file(const std::string& xml) {
  std::lock_guard lock(m_);
  Item it;
  it.xml = xml;
  q_.push_back(std::move(it));
  cv_.notify_all();
}

void Recorder::push(std::span<const std::byte> acq, std::span<const std::byte> traj,
                    std::span<const std::byte> data) {
  Item it;
  std::memcpy(it.spoke.acq_header.data(), acq.data(), std::min(acq.size(), it.spoke.acq_header.size()));
  it.spoke.traj.resize(traj.size() / sizeof(float));
  std::memcpy(it.spoke.traj.data(), traj.data(), it.spoke.traj.size() * sizeof(float));
  it.spoke.data.resize(data.size() / sizeof(cfloat));
  std::memcpy(static_cast<void*>(it.spoke.data.data()), data.data(), it.spoke.data.size() * sizeof(cfloat));
  it.bytes = acq.size() + traj.size() + data.size();
  std::unique_lock lock(m_);
  if (queued_bytes_ + it.bytes > max_bytes_ && !q_.empty()) {
    ++metrics_.recorder_waits;
    if (!warned_) {
      warned_ = true;
      log::warn("record: the writer is behind ({} MiB queued); the ingest waits for it (nothing is dropped)",
                queued_bytes_ >> 20);
    }
    cv_.wait(lock, [&] { return queued_bytes_ + it.bytes <= max_bytes_ || q_.empty() || stopping_; });
  }
  queued_bytes_ += it.bytes;
  q_.push_back(std::move(it));
  cv_.notify_all();
}

void Recorder::run() {
  std::unique_ptr<MrdRawWriter> w;
  for (;;) {
    Item it;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return !q_.empty() || stopping_; });
      if (q_.empty()) break;
      it = std::move(q_.front());
      q_.pop_front();
      queued_bytes_ -= it.bytes;
    }
    cv_.notify_all();
    try {
      if (!it.xml.empty()) {
        ++files_;
        std::string p = nth_file(path_, files_);
        while (files_ > 1 && !overwrite_ && std::filesystem::exists(p)) p = nth_file(path_, ++files_);  // never replace
        if (w) log::info("record: {} spokes in {}", w->count(), w->path());
        w = std::make_unique<MrdRawWriter>(p, it.xml);
        std::lock_guard lock(m_);
        current_ = p;
        continue;
      }
      if (!w) continue;  // spokes before any header are not accepted by the ingest
      w->append(it.spoke.acq_header, it.spoke.traj, it.spoke.data);
      ++metrics_.recorded;
      std::lock_guard lock(m_);
      ++written_;
    } catch (const std::exception& e) {  // counted and reported: a recording never fails silently
      ++metrics_.record_failures;
      std::lock_guard lock(m_);
      if (failures_++ == 0) {
        first_error_ = e.what();
        log::error("record: {} (further failures are only counted)", e.what());
      }
    }
  }
  if (w) log::info("record: {} spokes in {}", w->count(), w->path());
}

}  // namespace radstream
