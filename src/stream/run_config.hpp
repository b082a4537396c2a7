// The run's configuration: the stream (ingest), frames (window, stride, framing, skip policy), sinks and
// recon sections of `radstream run`'s YAML, each declared once in its visit().
#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "core/enum_table.hpp"
#include "recon/recon_params.hpp"
#include "stream/ingest_params.hpp"
#include "stream/mrd_params.hpp"

namespace radstream {

enum class Framing { Sliding, Rotation };
inline constexpr EnumTable<Framing, 2> kFramings{
    "framing", {{{Framing::Sliding, "sliding"}, {Framing::Rotation, "rotation"}}}};
enum class ImageFormat { Png, Cfl };
inline constexpr EnumTable<ImageFormat, 2> kImageFormats{
    "image format", {{{ImageFormat::Png, "png"}, {ImageFormat::Cfl, "cfl"}}}};

struct FrameParams {
  int window = 256;                    // W: spokes per frame
  int stride = 16;                     // S: a new frame every S spokes
  Framing framing = Framing::Sliding;  // rotation: linear streams, one frame per full rotation
  int max_window = 1024;               // largest W allowed while running (sizes the spoke ring)
  bool skip_when_behind = true;        // live: the newest due frame wins; false: every frame, in order

  template <class V>
  void visit(V& v) {
    v.field("window", window, 1, 1 << 16, "spokes per frame (W)");
    v.field("stride", stride, 1, 1 << 16, "a new frame every S spokes");
    v.choice("framing", framing, kFramings,
             "sliding, or rotation (one frame per full rotation of a linear scheme)");
    v.field("max_window", max_window, 1, 1 << 16, "largest window allowed while running");
    v.field("skip_when_behind", skip_when_behind,
            "when reconstruction falls behind, skip to the newest due frame (live); false: every frame");
  }
  void validate() const;
};

struct SinkParams {
  std::string record;             // MRD .h5 file of every received spoke; empty: off
  bool record_overwrite = false;  // an existing file is refused unless this is set
  double record_flush_s = 1.0;    // the recording reaches the disk at least this often
  int record_max_files = 100;     // recording files (one per stream) a run may write
  std::string publish;            // ZeroMQ PUB endpoint for the images; empty: off
  std::string images;             // folder for image files; empty: off
  int image_every = 10;           // write every Nth frame
  ImageFormat image_format = ImageFormat::Png;
  std::string metrics_json;        // the metrics report at the end; empty: off
  double report_interval_s = 1.0;  // the one-line status; 0: off

  template <class V>
  void visit(V& v) {
    v.field("record", record,
            "record every received spoke into this MRD file: .h5 (HDF5), .mrd (stream) or .mrd2 (MRD 2) "
            "(empty: off)");
    v.field("record_overwrite", record_overwrite, "allow recording over an existing file (false: refuse)");
    v.field("record_flush_s", record_flush_s, 0.05, 3600.0,
            "flush the recording to the disk at least this often (a crash keeps what was flushed)");
    v.field("record_max_files", record_max_files, 1, 100000,
            "recording files (one per stream) a run may write");
    v.field("publish", publish, "publish each image on this ZeroMQ PUB endpoint (empty: off)");
    v.field("images", images, "write image files into this folder (empty: off)");
    v.field("image_every", image_every, 1, 1 << 20, "write every Nth frame");
    v.choice("image_format", image_format, kImageFormats, "image file format");
    v.field("metrics_json", metrics_json, "write the metrics report here at the end (empty: off)");
    v.field("report_interval_s", report_interval_s, 0.0, 3600.0, "seconds between status lines (0: off)");
  }
  void validate() const;
};

// Which GPU reconstructs which slice (several GPUs in one process): one worker per slice, each on its GPU,
// with that slice's spoke ring mirrored there.
enum class GpuAssign { Static, LeastLoaded };
inline constexpr EnumTable<GpuAssign, 2> kGpuAssigns{
    "gpu assignment", {{{GpuAssign::Static, "static"}, {GpuAssign::LeastLoaded, "least-loaded"}}}};

struct PlacementParams {
  std::string gpus;                      // "0,1,2,3"; empty: the current GPU for every slice
  GpuAssign assign = GpuAssign::Static;  // static: slice s on gpus[s mod n]; least-loaded: see below

  template <class V>
  void visit(V& v) {
    v.field("gpus", gpus, "GPUs for the slices' workers, e.g. 0,1,2,3 (empty: the current GPU)");
    v.choice(
        "assign", assign, kGpuAssigns,
        "static: slice s on the (s mod n)-th GPU; least-loaded: each slice on the GPU with the fewest slices "
        "so far, ties to the one with the most free memory");
  }
  // The GPU list, each checked against `device_count` (ConfigError naming a bad entry).
  std::vector<int> gpu_list(int device_count) const;
  // slice -> GPU for `slices` slices (empty when no GPUs are listed).
  std::vector<int> assign_slices(int slices, int device_count) const;
};

struct RunConfig {
  IngestParams stream;
  FrameParams frames;
  SinkParams sinks;
  ReconParams recon;
  PlacementParams placement;
  MrdServerParams mrd;
  // Reads the `stream:`, `frames:`, `sinks:`, `recon:` and `placement:`, `mrd:` sections; unknown sections or
  // keys are errors.
  static RunConfig from_yaml(const YAML::Node& root, const std::string& context);
  void validate() const;
  // True when MRD clients are sent complex images: the reconstruction must keep the phase.
  bool wants_phase() const { return !mrd.listen.empty() && mrd.pixels == MrdPixels::Complex; }
};

// What a session's own config (an MRD client's config name or text) may set: its reconstruction and its
// frames. The frames keys it names apply over the server's (base); any other section is the server's and is
// refused with its name. Throws ConfigError (prefixed by `context`).
struct SessionConfig {
  ReconParams recon;
  FrameParams frames;
};
SessionConfig session_config_from_yaml(const YAML::Node& root, const RunConfig& base,
                                       const std::string& context);
// True when a YAML holds only a session's sections (recon:, frames:): a config the MRD server offers.
bool is_session_config(const YAML::Node& root);

}  // namespace radstream
