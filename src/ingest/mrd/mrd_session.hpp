// One MRD client connection of the MRD server (ingest/mrd/mrd_server.hpp): a reader thread that decodes the
// client's messages (config, XML header, JSON settings, acquisitions, waveforms, close) and a writer thread
// that sends the images, texts and the final close from a bounded queue, so that a slow client delays nobody.
// Its header admits it (a place among max_sessions, or an ERR and close); its config builds its own pipeline
// (stream/session_pipeline.hpp), to which its acquisitions go straight; every frame of that pipeline comes
// back to it as an image. After the client's close the frames still due are made within a drain deadline
// taken from the measured frame time; a summary text tells the client what it got. Either thread ends the
// session on a protocol fault, a timeout, a vanished or stalled client, with the reason in the log, the
// metrics and an ERR text; the other sessions and the server's own stream go on.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/log.hpp"
#include "ingest/mrd/mrd_images.hpp"
#include "ingest/mrd/mrd_server.hpp"
#include "io/mrd_protocol.hpp"
#include "recon/memory_account.hpp"
#include "stream/session_pipeline.hpp"
#include "wire/tcp_socket.hpp"

namespace radstream {

class SocketSource;

class MrdSession {
 public:
  // `fd`: the client's socket, or the pipe it is read from, with `out` the pipe its answers go to (empty:
  // `fd` both ways).
  MrdSession(const MrdServerParams& p, StreamRuntime& rt, MrdServer& server, Fd fd, std::string peer,
             std::uint32_t number, Fd out = {});
  ~MrdSession();
  MrdSession(const MrdSession&) = delete;
  MrdSession& operator=(const MrdSession&) = delete;

  void start();
  void request_stop() { stop_ = true; }
  bool ended() const { return ended_; }  // its threads are done (the server may join them)
  std::uint32_t number() const { return number_; }
  // Once ended(): "completed", "failed: why" or "refused: why".
  const std::string& outcome() const { return outcome_; }
  // "session 3 (127.0.0.1): gridding, window 64, ...: 12 of 20 frames due sent" ("" before its header).
  std::string status_line() const;

 private:
  struct Out {
    std::vector<std::byte> bytes;
    bool image = false;           // droppable when the queue is full
    std::int64_t arrival_ns = 0;  // an image's last spoke arrival (for arrival -> sent)
    std::int64_t ready_ns = 0;    // and when the image was made (for ready -> sent)
    std::size_t sent = 0;         // bytes already sent (a direct send the socket took in part)
  };
  // Where the session is: waiting for its header (no place held), admitted (a place held), or over.
  enum class Phase { Waiting, Admitted, Over };
  void sent_image(Out& o);  // counts an image sent whole and keeps its buffer
  // One image of a frame (the whole frame, or one partition of a volume) into `bytes`, in the series' scale.
  void encode_frame(const FrameResult& f, MrdImageContext& c, std::vector<std::byte>& bytes);
  void run();  // the reader thread
  void write_loop();
  void serve(SocketSource& src);
  void end_session(const std::string& error, std::optional<mrd::Fault> fault);
  // Stops the session's pipeline (its recording written out), adds its counts to the run's and keeps them
  // for the session's summary (the metrics JSON's mrd.each_session).
  void drop_pipeline();
  Metrics::Mrd::SessionSummary summary_;  // the reader's
  void select_config(const std::string& name, const std::string& how);
  void apply_config_file(const std::string& stem);
  void take_config(const SessionConfig& c, const std::string& name);
  std::string offered_configs() const;  // the names a client may give
  // A flood of texts or config changes ends the session with an ERR past these counts.
  static constexpr int kMaxTexts = 256;
  static constexpr int kMaxConfigs = 16;
  int texts_ = 0, configs_ = 0;
  void count_setting(const char* what, int count, int limit);
  void apply_json_settings(const std::string& text);
  void on_header(const std::string& xml, SocketSource& src);
  void open_pipeline();  // at the first acquisition (or the close): the session's settings are final then
  void on_acquisition(const mrd::Acquisition& a);
  void warn_if_behind();
  void finish_stream();  // after the client's close: the frames still due, then the summary and the close
  double drain_seconds() const;
  void queue(Out o);
  void queue_text(const std::string& text);
  void send_frame(std::shared_ptr<const FrameResult> f);  // on the pipeline's worker thread
  std::string counts() const;                             // "20 frames due, 18 made, 18 sent"

  MrdServerParams p_;
  StreamRuntime& rt_;
  MrdServer& server_;
  Fd fd_, pipe_out_;
  int out_fd() const { return pipe_out_ ? pipe_out_.get() : fd_.get(); }
  void hang_up();  // ends the reader's wait on the client (a socket's shutdown; a pipe's reader sees stop_)
  std::string outcome_;
  std::string peer_;
  std::uint32_t number_;
  std::uint32_t stream_id_;
  std::string tag_;  // "session 3": in this session's log lines (and the filter of what its client hears)
  std::thread reader_, writer_;
  std::optional<log::Subscription> forward_;  // this session's WRN/ERR lines to its client (start())
  std::atomic<bool> stop_{false}, ended_{false}, dead_{false};
  bool refused_ = false;   // the reader's: the session was refused (busy, unknown config), not failed
  bool admitted_ = false;  // the reader's: it held a place (given back when it ended)
  std::atomic<Phase> phase_{Phase::Waiting};

  // The session's settings (reader thread until the pipeline is made, then fixed).
  SessionSettings settings_;
  std::string config_name_ = "the server's default";
  std::string
      unknown_config_;  // a name the server does not know: refused (or served by default) at the header
  mutable std::mutex pipe_m_;  // guards pipe_ (made and dropped by the reader; read by status_line)
  std::shared_ptr<SessionPipeline> pipe_;
  // What this session holds of the memory all streams share: reserved when its header is admitted, given
  // back when it ends.
  std::shared_ptr<MemoryAccount::Hold> memory_ = std::make_shared<MemoryAccount::Hold>();
  std::atomic<std::uint64_t> frames_sent_{0};
  std::int64_t behind_told_ns_ = 0;

  // The stream (reader thread only, except fov_ read under frame_m_).
  std::string xml_;
  StreamHeader header_;
  bool have_header_ = false, radstream_xml_ = false;
  std::uint64_t sequence_ = 0;
  std::uint64_t spoke_index_ = 0;
  long last_step1_ = -1;

  std::mutex frame_m_;                // the frames' context: acquisitions by spoke index, fov, image index
  std::condition_variable frame_cv_;  // a frame was made (the drain waits on it)
  static constexpr std::size_t kRecent = 4096;
  std::vector<std::array<std::byte, 340>> recent_;
  std::vector<std::uint64_t> recent_index_;
  float fov_[3] = {256.f, 256.f, 10.f};
  std::uint16_t image_index_ = 0;
  bool frames_wanted_ = true;  // false once the session is over (no more images queued)

  std::mutex out_m_;  // the outgoing queue
  std::condition_variable out_cv_;
  std::deque<Out> out_;
  std::vector<std::vector<std::byte>> spare_;  // sent image buffers, reused (their capacity kept)
  std::size_t spare_kept_ = 4;  // at most this many: a frame's images (a volume's partitions) and a few more
  std::mutex encode_m_;
  MrdImageEncoder encoder_;  // the workers' (under encode_m_)
  double series_scale_ = 0;  // int16: the series' one scale (under encode_m_; 0 until the first frame)
  bool closing_ = false;
  bool writing_ =
      false;  // a message is being sent (by the writer, or directly by queue()): guarded by out_m_
};

}  // namespace radstream
