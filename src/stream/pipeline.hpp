// The streaming runtime (DESIGN.md section 6): ingest thread -> spoke ring -> reconstruction thread (frame
// assembler + reconstruction chain) -> sink thread (image publisher, image files), plus the recorder's own
// thread and a once-a-second metrics line. Queue policies:
//  - ingest -> ring: never drops; the ingest waits only while the assembler copies a window it would
//  overwrite;
//  - ring -> reconstruction: the newest due frame wins: when reconstruction falls behind, frames (not spokes)
//    are skipped and counted (frames.skip_when_behind: false reconstructs every frame instead, as long as
//    the ring still holds its spokes);
//  - reconstruction -> sinks: 8 frames; when full the oldest is dropped and counted; the latest-frame mailbox
//    (for a viewer) always holds the newest;
//  - recorder: never drops (see recorder.hpp).
#pragma once
#include <yaml-cpp/yaml.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "core/enum_table.hpp"
#include "recon/recon_chain.hpp"
#include "stream/ingest.hpp"
#include "stream/metrics.hpp"
#include "stream/recorder.hpp"

namespace radstream {

enum class Framing { Sliding, Rotation };
inline constexpr EnumTable<Framing, 2> kFramings{
    "framing", {{{Framing::Sliding, "sliding"}, {Framing::Rotation, "rotation"}}}};
enum class ImageFormat { Png, Cfl };
inline constexpr EnumTable<ImageFormat, 2> kImageFormats{
    "image format", {{{ImageFormat::Png, "png"}, {ImageFormat::Cfl, "cfl"}}}};

struct FrameParams {
  int window = 256;                 // W: spokes per frame
  int stride = 16;                  // S: a new frame every S spokes
  Framing framing = Framing::Sliding;  // rotation: linear streams, one frame per full rotation
  int max_window = 1024;            // largest W allowed while running (sizes the spoke ring)
  bool skip_when_behind = true;     // live: the newest due frame wins; false: every frame, in order

  template <class V>
  void visit(V& v) {
    v.field("window", window, 1, 1 << 16, "spokes per frame (W)");
    v.field("stride", stride, 1, 1 << 16, "a new frame every S spokes");
    v.choice("framing", framing, kFramings, "sliding, or rotation (one frame per full rotation of a linear scheme)");
    v.field("max_window", max_window, 1, 1 << 16, "largest window allowed while running");
    v.field("skip_when_behind", skip_when_behind,
            "when reconstruction falls behind, skip to the newest due frame (live); false: every frame");
  }
  void validate() const;
};

struct SinkParams {
  std::string record;                // MRD .h5 file of every received spoke; empty: off
  std::string publish;               // ZeroMQ PUB endpoint for the images; empty: off
  std::string images;                // folder for image files; empty: off
  int image_every = 10;              // write every Nth frame
  ImageFormat image_format = ImageFormat::Png;
  std::string metrics_json;          // the metrics report at the end; empty: off
  double report_interval_s = 1.0;    // the one-line status; 0: off

  template <class V>
  void visit(V& v) {
    v.field("record", record, "record every received spoke into this MRD .h5 file (empty: off)");
    v.field("publish", publish, "publish each image on this ZeroMQ PUB endpoint (empty: off)");
    v.field("images", images, "write image files into this folder (empty: off)");
    v.field("image_every", image_every, 1, 1 << 20, "write every Nth frame");
    v.choice("image_format", image_format, kImageFormats, "image file format");
    v.field("metrics_json", metrics_json, "write the metrics report here at the end (empty: off)");
    v.field("report_interval_s", report_interval_s, 0.0, 3600.0, "seconds between status lines (0: off)");
  }
  void validate() const;
};

struct RunConfig {
  IngestParams stream;
  FrameParams frames;
  SinkParams sinks;
  ReconParams recon;
  // Reads the `stream:`, `frames:`, `sinks:` and `recon:` sections; unknown sections or keys are errors.
  static RunConfig from_yaml(const YAML::Node& root, const std::string& context);
  void validate() const;
};

// One reconstructed frame and its trace.
struct FrameResult {
  std::uint64_t number = 0;
  int matrix = 0;
  std::vector<cfloat> image;  // [N][N], magnitude in the real part (coil k's magnitude in coil view)
  int coil = -1;              // -1: combined; else the coil shown
  std::uint64_t first_spoke = 0, last_spoke = 0;  // spoke indices
  std::uint64_t end_serial = 0;                   // ring serial after the last spoke
  int window = 0;
  std::int64_t last_acquired_ns = 0, last_arrival_ns = 0, ready_ns = 0;
};

// The header of a published image message (frame 1 is float32 [N][N] magnitudes): magic "RSIM" (u32),
// version u16 = 1, pad u16, frame number u64, matrix u32, window u32, first/last spoke index u64 x 2,
// last acquired ns i64, ready ns i64 (48..55), reserved to 64 bytes.
constexpr std::uint32_t kImageMagic = 0x4D495352u;

class Pipeline {
 public:
  Pipeline(const RunConfig& cfg, const Registry& registry);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  void start();
  void stop();  // clean: stops the ingest, finishes the frame in flight, drains the sinks and the recorder

  // Between frames, while running. Throws ConfigError naming a bad value.
  void set_window(int w);
  void set_stride(int s);
  // A new reconstruction setting (method, DCF, kernel, FFT engine, backend...), applied between frames by
  // rebuilding the chain. Throws ConfigError naming a bad value (the running chain stays).
  void set_recon(const ReconParams& p);
  ReconParams recon() const;
  // -1: the combined image; k >= 0: coil k's magnitude (needs per-coil images: not with the fused tail).
  void set_coil_view(int coil) { coil_view_ = coil; }
  int coil_view() const { return coil_view_; }
  // Starts recording every received spoke into `path` (.h5), or stops (empty). Throws ConfigError/IoError.
  void set_recording(const std::string& path);
  std::string recording() const;
  std::string endpoint() const { return ingest_->bound_endpoint(); }
  StreamHeader stream_header() const { return ingest_->state().header; }
  std::string last_error() const;
  int window() const { return window_; }
  int stride() const { return stride_; }
  Backend backend() const { return backend_; }

  Metrics& metrics() { return metrics_; }
  double elapsed_s() const;
  std::shared_ptr<const FrameResult> latest() const;  // the newest frame (latest wins), or null
  bool wait_frames(std::uint64_t n, std::chrono::milliseconds timeout) const;
  // Called on the reconstruction thread for every frame (tests; keep it short).
  void on_frame(std::function<void(const FrameResult&)> f) { on_frame_ = std::move(f); }
  std::string report();  // the status line
  // True while every frame due with the spokes received so far has been reconstructed (or dropped).
  bool drained() const { return drained_; }
  void write_metrics_json() const;

 private:
  void recon_loop();
  void recon_frames();
  void sink_loop();
  void report_loop();
  void report_lines();
  void log_once(int kind, const std::string& what);
  bool make_frame(ReconChain& chain, SpokeRing& ring, std::uint64_t end, int W, Frame& host_frame,
                  FrameResult& out);

  RunConfig cfg_;
  const Registry& registry_;
  Backend backend_;
  Metrics metrics_;
  zmq::context_t zctx_;
  std::unique_ptr<Recorder> recorder_;
  std::unique_ptr<Ingest> ingest_;
  std::unique_ptr<zmq::socket_t> publisher_;
  std::atomic<int> window_, stride_, coil_view_{-1};
  std::unique_ptr<ReconParams> pending_recon_;  // guarded by m_
  std::string last_error_;                      // guarded by m_
  std::string recording_;                       // guarded by m_
  std::atomic<bool> running_{false};
  std::int64_t t0_ns_ = 0;
  std::thread recon_, sink_, reporter_;
  std::function<void(const FrameResult&)> on_frame_;

  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  std::deque<std::shared_ptr<const FrameResult>> sink_q_;
  std::shared_ptr<const FrameResult> latest_;
  bool sinks_stop_ = false;
  std::array<std::atomic<bool>, 6> logged_{};
  std::atomic<bool> drained_{false};  // the reconstruction thread found no frame due (it waits for spokes)
};

}  // namespace radstream
