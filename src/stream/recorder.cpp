#include "stream/recorder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream {

namespace {

// The file for the n-th geometry of a recording: NAME.h5, NAME_2.h5, ... (NAME.mrd, NAME_2.mrd, ...)
std::string nth_file(const std::string& path, int n) {
  const std::size_t dot = path.rfind('.');
  return n == 1 ? path : path.substr(0, dot) + "_" + std::to_string(n) + path.substr(dot);
}

// Bytes that can still be written to `path`: the free space of its file system (as an unprivileged user sees
// it) and what the process's file size limit (ulimit -f) leaves.
std::uint64_t room_for(const std::string& path) {
  namespace fs = std::filesystem;
  std::uint64_t room = ~std::uint64_t(0);
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) == 0) room = std::uint64_t(v.f_bavail) * v.f_frsize;
  rlimit r{};
  if (::getrlimit(RLIMIT_FSIZE, &r) == 0 && r.rlim_cur != RLIM_INFINITY) {
    std::error_code ec;
    const std::uint64_t size = fs::file_size(path, ec);
    const std::uint64_t left = !ec && size < r.rlim_cur ? r.rlim_cur - size : 0;
    room = std::min(room, left);
  }
  return room;
}

}  // namespace

RecordingNames::RecordingNames(const RecordOptions& o) : o_(o) {
  namespace fs = std::filesystem;
  const std::string& path = o_.path;
  if (!path.ends_with(".h5") && !path.ends_with(".mrd") && !path.ends_with(".mrd2"))
    throw ConfigError("record: '" + path +
                      "' must be an .h5 (MRD HDF5), .mrd (MRD stream) or .mrd2 (MRD 2) file name");
  if (o_.max_files < 1) throw ConfigError(fmt::format("record: max_files {} must be >= 1", o_.max_files));
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw IoError("record: cannot create the folder " + dir.string() + " for " + path + ": " + ec.message());
  if (::access(dir.c_str(), W_OK) != 0)
    throw IoError("record: the folder " + dir.string() + " is not writable (" + std::strerror(errno) + ")");
  if (!o_.overwrite && fs::exists(path))
    throw IoError("record: " + path + " exists; choose another name or allow overwriting (--overwrite, " +
                  "sinks.record_overwrite: true)");
  // Prove now, before any spoke, that the file can be made (a folder's permission bits do not: /proc, a
  // read-only mount, a full disk), and claim the name: created exclusively, so that nothing else takes it
  // before the stream's header comes and the real file is written there.
  if (!fs::exists(path)) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) throw IoError("record: cannot create " + path + " (" + std::strerror(errno) + ")");
    ::close(fd);
    first_claimed_ = true;
  } else if (::access(path.c_str(), W_OK) != 0) {
    throw IoError("record: " + path + " is not writable (" + std::strerror(errno) + ")");
  }
}

RecordingNames::~RecordingNames() {
  if (first_claimed_ && files_ == 0) {  // the stream never came: no empty placeholder is left behind
    std::error_code ec;
    std::filesystem::remove(o_.path, ec);
  }
}

std::string RecordingNames::claim() {
  std::lock_guard lock(m_);
  if (made_ >= o_.max_files) return "";
  ++made_;
  ++files_;
  if (files_ == 1 && (first_claimed_ || o_.overwrite)) return o_.path;
  for (;; ++files_) {  // NAME_2.h5, ...: taken only when nobody has it (or when overwriting)
    const std::string p = nth_file(o_.path, files_);
    if (o_.overwrite) return p;
    const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
      ::close(fd);
      return p;
    }
    if (errno != EEXIST) return p;  // the writer will say why it cannot be made
  }
}

Recorder::Recorder(const RecordOptions& options, Metrics& metrics, std::shared_ptr<RecordingNames> names)
    : o_(options), metrics_(metrics), names_(std::move(names)) {
  if (const char* f = std::getenv("RADSTREAM_TEST_RECORD_FAIL_AFTER")) fail_after_ = std::atol(f);
  if (!names_) names_ = std::make_shared<RecordingNames>(o_);
  thread_ = std::thread([this] { run(); });
}

std::size_t Recorder::failures() const {
  std::lock_guard lock(m_);
  return failures_;
}

std::string Recorder::status() const {
  std::lock_guard lock(m_);
  const std::string where = current_.empty() ? o_.path : current_;
  if (failed_)
    return fmt::format("FAILED: {} spoke(s) not recorded after {} spokes in {} (first: {})", failures_,
                       written_, where, first_error_);
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
  if (queued_bytes_ + it.bytes > o_.max_queue_bytes && !q_.empty()) {
    ++metrics_.recorder_waits;
    if (!warned_) {
      warned_ = true;
      log::warn("record: the writer is behind ({} MiB queued); the ingest waits for it (nothing is dropped)",
                queued_bytes_ >> 20);
    }
    cv_.wait(lock, [&] { return queued_bytes_ + it.bytes <= o_.max_queue_bytes || q_.empty() || stopping_; });
  }
  queued_bytes_ += it.bytes;
  q_.push_back(std::move(it));
  cv_.notify_all();
}

void Recorder::fail(const std::string& what, bool lost_a_spoke) {
  if (lost_a_spoke) ++metrics_.record_failures;
  std::lock_guard lock(m_);
  failed_ = true;
  if (lost_a_spoke) ++failures_;
  if (first_error_.empty()) {
    first_error_ = what;
    log::error("record: {} (the file is closed; every spoke not recorded from now on is counted)", what);
  }
}

void Recorder::run() {
  std::unique_ptr<MrdRawWriter> w;
  // Cleanly, whatever state the file is in. A file closed for the next stream is said here; the last one is
  // in the run's recording summary (said once, by its owner).
  const auto close = [&](bool last = false) {
    if (!w) return;
    try {
      w->flush();
    } catch (const std::exception&) {
    }
    if (last)
      log::debug("record: {} spokes in {}", w->count(), w->path());
    else
      log::info("record: {} spokes in {}", w->count(), w->path());
    w.reset();
  };
  const auto flush_every = std::chrono::duration<double>(o_.flush_s > 0 ? o_.flush_s : 1e9);
  // A new file's first spokes reach the disk within 0.2 s (a run killed early still leaves them).
  const auto first_flush =
      std::min<std::chrono::duration<double>>(flush_every, std::chrono::milliseconds(200));
  auto last_flush = std::chrono::steady_clock::now(), file_start = last_flush, last_check = last_flush;
  bool dirty = false, failed = false;
  std::size_t count_at_check = 0, spoke_bytes = 0;
  std::size_t flushed = 0;  // spokes of the current file on the disk as of its last flush
  // A file that cannot be made (no descriptor left, a transient error) is tried again with a growing pause;
  // the spokes that come meanwhile are held (up to kHoldBytes, the rest counted as not recorded) and written
  // first when it is made.
  constexpr std::size_t kHoldBytes = std::size_t(64) << 20;
  std::string waiting_xml, waiting_path;
  std::deque<Item> held;
  std::size_t held_bytes = 0;
  int attempts = 0;
  auto retry_at = std::chrono::steady_clock::now();
  const auto begin_file = [&](const std::string& p, const std::string& xml) {
    w = std::make_unique<MrdRawWriter>(p, xml);
    w->flush();  // a readable file with its header and no spokes from the start
    dirty = false;
    flushed = 0;
    file_start = std::chrono::steady_clock::now();
    count_at_check = 0;
    std::lock_guard lock(m_);
    current_ = p;
  };
  const auto write_spoke = [&](const Item& s) {
    if (fail_after_ >= 0 && long(w->count()) >= fail_after_)
      throw IoError(fmt::format("{}: write error after {} spokes (RADSTREAM_TEST_RECORD_FAIL_AFTER)",
                                w->path(), w->count()));
    w->append(s.spoke.acq_header, s.spoke.traj, s.spoke.data);
    spoke_bytes = s.bytes;
    dirty = true;
    ++metrics_.recorded;
    std::lock_guard lock(m_);
    ++written_;
  };
  // Makes the waiting file: true when made (the held spokes written into it), false to try again later.
  const auto try_waiting_file = [&]() -> bool {
    try {
      begin_file(waiting_path, waiting_xml);
    } catch (const std::exception& e) {
      w.reset();
      if (attempts++ == 0)
        log::error("record: cannot make {} ({}); trying again, the spokes meanwhile held (up to {} MiB)",
                   waiting_path, e.what(), kHoldBytes >> 20);
      retry_at = std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(std::min(200 << std::min(attempts, 5), 5000));
      return false;
    }
    if (attempts > 0)
      log::info("record: {} made after {} failed attempt(s); the {} spokes held meanwhile are written first",
                waiting_path, attempts, held.size());
    waiting_xml.clear();
    attempts = 0;
    for (; !held.empty(); held.pop_front()) write_spoke(held.front());
    held_bytes = 0;
    return true;
  };
  for (;;) {
    Item it;
    bool have = false;
    {
      std::unique_lock lock(m_);
      cv_.wait_for(lock, flushed > 0 ? flush_every : first_flush, [&] { return !q_.empty() || stopping_; });
      if (!q_.empty()) {
        it = std::move(q_.front());
        q_.pop_front();
        queued_bytes_ -= it.bytes;
        have = true;
      } else if (stopping_) {
        break;
      }
    }
    if (have) cv_.notify_all();
    try {
      if (!waiting_xml.empty() && !failed && std::chrono::steady_clock::now() >= retry_at) try_waiting_file();
      if (have && !it.xml.empty()) {  // a new stream: a new file
        close();
        if (failed) continue;
        for (; !held.empty(); held.pop_front())  // the previous stream's file was never made
          fail(fmt::format("{} could not be made; its stream's spokes are not recorded", waiting_path), true);
        held_bytes = 0;
        waiting_xml.clear();
        attempts = 0;
        const std::string p = names_->claim();
        if (p.empty()) {
          failed = true;
          fail(fmt::format(
                   "the run's limit of {} recording files (sinks.record_max_files) is reached; later streams "
                   "are not recorded",
                   names_->limit()),
               false);
          continue;
        }
        waiting_path = p;
        waiting_xml = it.xml;
        try_waiting_file();
      } else if (have) {
        if (failed) {  // counted, never silently dropped
          ++metrics_.record_failures;
          std::lock_guard lock(m_);
          ++failures_;
          continue;
        }
        if (!waiting_xml.empty()) {  // its file is still to be made
          if (held_bytes + it.bytes <= kHoldBytes) {
            held_bytes += it.bytes;
            held.push_back(std::move(it));
          } else {
            fail(fmt::format("{} could not be made and {} MiB of spokes wait for it; spokes beyond are not "
                             "recorded",
                             waiting_path, kHoldBytes >> 20),
                 true);
          }
          continue;
        }
        if (!w) continue;  // spokes before any header are not accepted by the ingest
        write_spoke(it);
      }
      // What is written reaches the disk at least every flush_s, and whenever the stream pauses, so that a
      // crash or SIGKILL leaves a readable file.
      const auto now = std::chrono::steady_clock::now();
      if (w && dirty &&
          (now - last_flush >= flush_every || !have || (flushed == 0 && now - file_start >= first_flush))) {
        w->flush();
        dirty = false;
        flushed = w->count();
        last_flush = now;
      }
      // Stop while the file can still be closed properly: every 0.1 s (whatever the flush cadence), room for
      // 1 MiB and twice what came since the last check. A disk that fills anyway is the write error below.
      if (w && now - last_check >= std::chrono::milliseconds(100)) {
        last_check = now;
        const std::size_t n = w->count();
        const std::uint64_t need =
            (1u << 20) + 2 * std::uint64_t(n - count_at_check) * std::max<std::size_t>(spoke_bytes, 1);
        count_at_check = n;
        if (const std::uint64_t room = room_for(w->path()); room < need) {
          const std::string where = w->path();
          close();
          failed = true;
          fail(fmt::format(
                   "{}: only {:.1f} MiB left on its disk (or under the file size limit): recording stopped "
                   "and the file closed after {} spokes",
                   where, double(room) / 1048576.0, n),
               false);
        }
      }
    } catch (const std::exception& e) {  // counted and reported: a recording never fails silently
      failed = true;
      fail(e.what(), have && it.xml.empty());
      if (w) {
        w->abandon();  // never touched again: the file stays readable as last flushed
        // The counters say what a reader of the file finds: the spokes written after the last flush are
        // not in it, so they are failures, not recorded.
        const std::size_t lost = w->count() - flushed;
        metrics_.recorded -= lost;
        metrics_.record_failures += lost;
        {
          std::lock_guard lock(m_);
          written_ -= std::min(written_, lost);
          failures_ += lost;
        }
        log::info(
            "record: {} keeps the {} spokes of its last flush ({} written after it are counted as not "
            "recorded)",
            w->path(), flushed, lost);
        w.reset();
      }
    }
  }
  if (!waiting_xml.empty() && !failed && !try_waiting_file()) {  // a last try; else what it held is lost
    fail(fmt::format("{} could not be made by the end of the run; {} spokes held for it are not recorded",
                     waiting_path, held.size()),
         false);
    metrics_.record_failures += held.size();
    std::lock_guard lock(m_);
    failures_ += held.size();
  }
  close(true);
}

}  // namespace radstream
