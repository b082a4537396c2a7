// The recorder sink: every spoke the ingest receives, as received (the acquisition header bytes, trajectory
// and data), into an MRD HDF5 file that starts with the stream's XML header text. It never drops: its queue
// is bounded by bytes and, when full, the ingest waits (a PUSH sender then blocks: nothing is lost) and the
// recorder reports that it is behind. A new stream starts a new file (NAME_2.h5, NAME_3.h5, ..., at most
// max_files per run; an existing file is never replaced unless overwriting is allowed).
// A crash loses little: the file is flushed every flush_s seconds (and when the stream pauses), so a SIGKILL
// leaves a readable file with every spoke up to the last flush.
// Nothing fails silently: the constructor checks the path (creates its folder, refuses an existing file
// unless overwriting is allowed, claims the name by creating the file) and throws IoError naming the problem;
// a write that fails later closes the file (what was flushed stays readable), is logged once, and every spoke
// not recorded from then on is counted (metrics record_failures) and reported by status().
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

struct RecordOptions {
  std::string path;        // NAME.h5
  bool overwrite = false;  // replace existing files
  double flush_s = 1.0;    // flush the file at least this often (0: only at the end)
  int max_files = 100;     // files (streams) one run may write
  std::size_t max_queue_bytes = std::size_t(1) << 30;  // the ingest waits beyond this
};

// The file names of one run's recordings, shared by every recorder of the run (each session records its own
// stream): NAME.h5 for the first stream, then NAME_2.h5, ...; at most max_files; an existing file is never
// taken unless overwriting. The constructor checks the path and claims NAME.h5 (created exclusively, so that
// nothing else takes it before the first stream comes); if no stream ever comes, the empty placeholder is
// removed when the last recorder lets go of the names. Throws ConfigError/IoError naming the problem.
class RecordingNames {
 public:
  explicit RecordingNames(const RecordOptions& o);
  ~RecordingNames();
  RecordingNames(const RecordingNames&) = delete;
  RecordingNames& operator=(const RecordingNames&) = delete;
  std::string claim();  // the next file's name; "" once max_files are made
  int limit() const { return o_.max_files; }

 private:
  RecordOptions o_;
  std::mutex m_;
  int files_ = 0;  // the number in the last file name used (NAME.h5 is 1)
  int made_ = 0;
  bool first_claimed_ = false;
};

class Recorder {
 public:
  // `names`: the run's file names when several recorders share them (null: this recorder's own).
  Recorder(const RecordOptions& options, Metrics& metrics, std::shared_ptr<RecordingNames> names = nullptr);
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
  // Logs the first failure; `lost_a_spoke`: the spoke in hand was not recorded (counted). Closes nothing.
  void fail(const std::string& what, bool lost_a_spoke);

  RecordOptions o_;
  Metrics& metrics_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<Item> q_;
  std::size_t queued_bytes_ = 0;
  bool stopping_ = false, warned_ = false, failed_ = false;
  std::shared_ptr<RecordingNames> names_;
  std::string current_;
  std::size_t written_ = 0, failures_ = 0;
  // Tests: a write error after this many spokes of a file (RADSTREAM_TEST_RECORD_FAIL_AFTER; -1: never), to
  // check the accounting of a disk that fails mid-file.
  long fail_after_ = -1;
  std::string first_error_;
  std::thread thread_;
};

}  // namespace radstream
