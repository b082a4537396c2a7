#include "stream/recorder.hpp"

#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream {

Recorder::Recorder(const std::string& path, std::size_t max_queue_bytes, Metrics& metrics)
    : path_(path), max_bytes_(max_queue_bytes), metrics_(metrics) {
  if (path.size() < 4 || path.substr(path.size() - 3) != ".h5")
    throw ConfigError("record: '" + path + "' must be an .h5 file name");
  thread_ = std::thread([this] { run(); });
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
        const std::string p =
            files_ == 1 ? path_ : path_.substr(0, path_.size() - 3) + "_" + std::to_string(files_) + ".h5";
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
    } catch (const Error& e) {
      log::error("record: {}", e.what());
    }
  }
  if (w) log::info("record: {} spokes in {}", w->count(), w->path());
}

}  // namespace radstream
