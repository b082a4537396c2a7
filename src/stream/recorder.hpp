// The recorder sink: every spoke the ingest receives, as received (the acquisition header bytes, trajectory
// and data), into an MRD HDF5 file that starts with the stream's XML header text. It never drops: its queue
// is bounded by bytes and, when full, the ingest waits (a PUSH sender then blocks: nothing is lost) and the
// recorder reports that it is behind. A geometry change starts a new file (NAME_2.h5, NAME_3.h5, ...).
// Nothing fails silently: the constructor checks the path (creates its folder, refuses an existing file unless
// overwriting is allowed, checks that the folder is writable) and throws IoError naming the problem; a write
// that fails later is counted (metrics record_failures), logged once, and reported by status().
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>

#include "io/mrd_raw.hpp"
#include "stream/metrics.hpp"

namespace radstream {

class Recorder {
 public:
  Recorder(const std::string& path, std::size_t max_queue_bytes, Metrics& metrics, bool overwrite = false);
  ~Recorder();  // writes what is queued, then closes
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void start_file(const std::string& xml);
  void push(std::span<const std::byte> acq_header, std::span<const std::byte> traj,
            std::span<const std::byte> data);
  void stop();  // drains the queue and joins the writer
  std::size_t written() const;
  std::string current_path() const;
  std::size_t failures() const;
  // "N spokes in FILE" or "FAILED after N spokes: <first error>".
  std::string status() const;

 private:
  struct Item {
    std::string xml;  // non-empty: start a new file with this header
    RawSpoke spoke;
    std::size_t bytes = 0;
  };
  void run();

  std::string path_;
  bool overwrite_;
  std::size_t max_bytes_;
  Metrics& metrics_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<Item> q_;
  std::size_t queued_bytes_ = 0;
  bool stopping_ = false, warned_ = false;
  int files_ = 0;
  std::string current_;
  std::size_t written_ = 0, failures_ = 0;
  std::string first_error_;
  std::thread thread_;
};

}  // namespace radstream
