// One MRD client connection of the MRD server (stream/mrd_server.hpp): a reader thread that decodes the
// client's messages (config, XML header, JSON settings, acquisitions, waveforms, close), selects the
// reconstruction and forwards the stream as wire messages to the ingest; and a writer thread that sends the
// images, texts and the final close from a bounded queue, so that a slow client delays nobody. Either thread
// ends the session on a protocol fault, a timeout, a vanished or stalled client, with the reason in the log
// and the metrics; the pipeline and the other sessions go on.
#pragma once
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "core/log.hpp"
#include "io/mrd_protocol.hpp"
#include "stream/mrd_images.hpp"
#include "stream/mrd_server.hpp"
#include "stream/noise_prewhitener.hpp"
#include "wire/tcp_socket.hpp"

namespace radstream {

class MrdSession {
 public:
  MrdSession(const MrdServerParams& p, StreamRuntime& rt, const std::string& ingest_endpoint, Fd fd,
             std::string peer, std::uint32_t number);
  ~MrdSession();
  MrdSession(const MrdSession&) = delete;
  MrdSession& operator=(const MrdSession&) = delete;

  void start();
  void request_stop() { stop_ = true; }
  bool ended() const { return ended_; }
  bool active() const {
    return !finished_;
  }  // counted against --mrd-max-sessions  // its threads are done (the server may join them)
  // Whether its stream is in the pipeline (its header forwarded) and its frames are still wanted.
  bool owns_frames() const { return header_sent_ && !finished_ && !dead_; }
  void send_frame(const FrameResult& f);  // on the sink thread: encoded and queued
  std::uint32_t number() const { return number_; }

 private:
  struct Out {
    std::vector<std::byte> bytes;
    bool image = false;           // droppable when the queue is full
    std::int64_t arrival_ns = 0;  // an image's last spoke arrival (for arrival -> sent)
    std::int64_t ready_ns = 0;    // and when the image was made (for ready -> sent)
    std::size_t sent = 0;         // bytes already sent (a direct send the socket took in part)
  };
  void sent_image(Out& o);  // counts an image sent whole and keeps its buffer
  void run();               // the reader thread
  void write_loop();
  void serve(mrd::ByteSource& src);
  void select_config(const std::string& name, const std::string& how);
  // A flood of texts or config changes (each may reset the reconstruction, and is logged) ends the session
  // with an ERR past these counts.
  static constexpr int kMaxTexts = 256;
  // Noise samples (coil vectors) taken into the prewhitening per session: several times a scanner's noise
  // scan, and small enough that noise cannot keep a session (and its slot) busy.
  static constexpr std::size_t kMaxNoiseSamples = std::size_t(1) << 18;
  bool noise_budget_told_ = false;
  static constexpr int kMaxConfigs = 16;
  int texts_ = 0, configs_ = 0;
  void count_setting(const char* what, int count, int limit);
  void apply_json_settings(const std::string& text);
  void on_header(const std::string& xml);
  void forward_header();
  void on_acquisition(const mrd::Acquisition& a);
  void finish_stream();  // after the client's close: the frames still due, then the close
  void queue(Out o);
  void queue_text(const std::string& text);
  void send_to_ingest(std::vector<zmq::message_t>& parts);
  // The stream's close, as a sender ends its stream; waits until the ingest has taken it (or the deadline),
  // so that the next session's stream, on another socket, cannot reach the ingest before it.
  void close_for_ingest(std::int64_t deadline_ns);

  MrdServerParams p_;
  StreamRuntime& rt_;
  zmq::socket_t push_;
  Fd fd_;
  std::string peer_;
  std::uint32_t number_;
  std::uint32_t stream_id_;
  std::thread reader_, writer_;
  int samples_full_ = 0;   // the header's readout (encodedSpace): partial echoes are placed into it
  mrd::Acquisition echo_;  // the placed partial echo (its buffers kept from spoke to spoke)
  std::uint64_t partial_echoes_ = 0;
  std::optional<log::Subscription> forward_;  // the pipeline's WRN/ERR lines to the client (start())
  std::atomic<bool> stop_{false}, finished_{false}, ended_{false}, dead_{false}, header_sent_{false};

  // The stream (reader thread only, except fov_ and method_ read under frame_m_).
  std::string xml_;
  bool have_header_ = false, radstream_xml_ = false;
  std::uint64_t sequence_ = 0;
  std::uint64_t spoke_index_ = 0;
  long last_step1_ = -1;
  NoisePrewhitener noise_;  // from the session's noise acquisitions, applied to every later spoke
  bool noise_failed_ = false;
  std::vector<cfloat> white_;          // the prewhitened copy of the spoke in hand
  double receiver_bandwidth_ = 0.793;  // relativeReceiverNoiseBandwidth (Gadgetron's default when absent)

  std::mutex frame_m_;  // the frames' context: acquisitions by spoke index, fov, method, image index
  static constexpr std::size_t kRecent = 4096;
  std::vector<std::array<std::byte, 340>> recent_;
  std::vector<std::uint64_t> recent_index_;
  float fov_[3] = {256.f, 256.f, 10.f};
  std::uint16_t image_index_ = 0;

  std::mutex out_m_;  // the outgoing queue
  std::condition_variable out_cv_;
  std::deque<Out> out_;
  std::vector<std::vector<std::byte>> spare_;  // sent image buffers, reused (their capacity kept)
  MrdImageEncoder encoder_;                    // the sink thread's
  bool closing_ = false;
  bool writing_ =
      false;  // a message is being sent (by the writer, or directly by queue()): guarded by out_m_
};

}  // namespace radstream
