// A reconstruction chain executes a recipe (recon/recipes.hpp): the stages of one method, configured once
// for a geometry, with the recipe's named buffers and each stage's declared state (StageSpec) allocated in
// configure(). reconstruct() runs one frame and allocates nothing. The chain also owns the frames' coil maps
// when a stage reads them: a coil-map source (recon/coil_map_source.hpp) gives them from the file or
// estimates them from the frames, before each frame, so that no caller repeats that protocol.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/frame.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/pinned_buffer.hpp"
#include "recon/recipes.hpp"
#include "recon/recon_params.hpp"
#include "recon/registry.hpp"

namespace radstream {

class CoilMapSource;
struct CoilMapBand;

struct StageTiming {
  std::string stage;
  double ms = 0.0;
};

// With the CUDA backend the chain owns a stream, uploads the frame (trajectory and data) at the start of
// reconstruct(), keeps every intermediate on the device, and brings back only the combined image (per-stage
// times from CUDA events).
class ReconChain {
 public:
  // The recipe recipe_for(params, backend).
  ReconChain(const ReconParams& params, Backend backend, const Registry& registry);
  ReconChain(const ReconParams& params, Backend backend, const Registry& registry, Recipe recipe);
  ~ReconChain();
  ReconChain(const ReconChain&) = delete;
  ReconChain& operator=(const ReconChain&) = delete;

  // Plans every stage for the geometry (slow: tables, FFT plans, buffers). Throws ConfigError.
  void configure(const Geometry& g);
  const Geometry& geometry() const { return g_; }
  bool configured() const { return configured_; }

  // Reconstructs one frame; returns the combined image [N][N] (magnitude in the real part). The coil maps,
  // when a stage reads them and the caller gave none, come from the chain's source first (the file, or an
  // estimate from this frame when one is due). Throws InputError when the frame does not match the
  // configured geometry.
  View<const cfloat> reconstruct(const Frame& frame);
  // CUDA backend: the caller enqueues the frame's input itself, fill(d_data [coils][spokes][samples], d_traj
  // [spokes][samples][2], stream) (e.g. gathered from spokes already on the GPU), then the chain runs as in
  // reconstruct(). host_frame: the same frame on the host, needed only when wants_host_frame() (a coil-map
  // estimate is due); may be null otherwise, and for a due refresh when `band` holds its samples
  // (map_refresh_band()). Returns an empty view when fill returns false.
  View<const cfloat> reconstruct_device(const std::function<bool(cfloat*, float*, gpu::StreamRef)>& fill,
                                        const Frame* host_frame = nullptr, CoilMapBand* band = nullptr);
  // True when the next frame's coil-map update needs the frame's data on the host (the first estimate or a
  // due refresh): a GPU stream copies its window to the host only then.
  bool wants_host_frame() const;
  // When the next frame's update is a refresh: the radius of the band of samples it reads (a GPU stream
  // copies only those: SpokeRing::copy_window_band), else 0.
  double map_refresh_band() const;
  // Live streams: the first coil-map estimate is the fast local one (usable within the first window), the
  // refined one follows on a helper thread. Offline (the default): refined from the start.
  void set_live_maps(bool live);
  // Offline timing of one frame: the maps from the file or this frame's estimate now (not timed), then kept
  // for every later frame (no refresh).
  void fix_coil_maps(const Frame& frame);
  // Zeros every stage's state (previous outputs and declared state buffers): a new stream starts afresh.
  // configure() does it too.
  void reset_state();
  // The per-coil images [coils][N][N] of the last frame (copied back from the GPU on the CUDA backend).
  // Throws InputError when the chain does not keep them (the fused custom-FFT tail).
  View<const cfloat> coil_images();
  bool keeps_coil_images() const { return recipe_.has_buffer("coil_images"); }
  // The last frame's complex image [N][N] before its magnitude (the "solution" buffer: cg-sense, nlinv, or a
  // combination that keeps the phase), copied back from the GPU on the CUDA backend. Throws InputError when
  // the recipe has none.
  View<const cfloat> complex_image();
  bool keeps_complex_image() const { return recipe_.has_buffer("solution"); }
  // A stage's declared output (StageSpec::outputs) of the last frame, by name, into `host` (resized; waits
  // for the device): its extents, or rank 0 when no stage of the recipe declares it or none has it yet. Made
  // on request only, never on the frame's path (on the GPU, into a buffer made on the first request).
  Extents output(const std::string& name, std::vector<cfloat>& host);
  // The coil sensitivities a stage of the recipe estimated itself (output kEstimatedCoilMaps, nlinv's),
  // [coils][N][N] on the host, and their count (0: none; the coils may be virtual ones).
  int estimated_coil_maps(std::vector<cfloat>& host);
  const Recipe& recipe() const { return recipe_; }
  // True when the CUDA frames replay a captured CUDA graph.
  bool uses_graph() const { return !graph_.empty(); }
  Backend backend() const { return ctx_.backend; }
  int device() const { return ctx_.device; }  // the CUDA device of the CUDA backend
  // Coil maps [coils][N][N] given by the caller (copied; moved to the GPU on the CUDA backend), handed to
  // every stage in the frame context from the next frame on, with a new version; the chain's own source then
  // stops. Throws InputError when they do not match the configured geometry.
  void set_coil_maps(View<const cfloat> host_maps);
  // The same from the chain's coil-map source (its source goes on).
  void take_coil_maps(View<const cfloat> host_maps);
  bool needs_coil_maps() const { return reads_maps_; }  // some stage of the recipe reads them
  // The chain's coil-map source (null when no stage reads maps): how many estimates it made, waits.
  CoilMapSource* coil_map_source() { return maps_source_.get(); }
  bool has_coil_maps() const { return maps_version_ != 0; }
  std::uint64_t coil_maps_version() const { return maps_version_; }
  View<const cfloat> coil_maps() const { return maps_host_.view(); }  // the host copy
  // The last frame's solver report (iterations, residual, time), when the recipe iterates.
  SolverStats solver_stats();
  // Time of each step in the last frame: "set_points" first when the recipe has a point plan, then the
  // stages (wall time on the CPU, CUDA events on the GPU).
  const std::vector<StageTiming>& timings() const { return timings_; }
  // The stage running now on the CPU backend ("" between frames, and on the CUDA backend, whose stages are
  // queued at once): for a progress line on another thread.
  std::string running_stage() const;
  std::vector<std::string> stage_names() const;

 private:
  ReconParams params_;
  Context ctx_;
  std::vector<std::unique_ptr<Stage>> stages_;
  Recipe recipe_;
  std::vector<HostBuffer<cfloat>> buffers_;         // owned outputs (CPU backend)
  std::vector<DeviceBuffer<cfloat>> d_buffers_;     // owned outputs (CUDA backend)
  std::vector<std::string> buffer_names_;           // of buffers_ / d_buffers_
  std::vector<int> output_of_;                      // stage i writes buffer output_of_[i]
  int buffer_index(const std::string& name) const;  // -1 when absent
  DeviceBuffer<cfloat> d_input_;                    // the frame's data and trajectory on the GPU
  DeviceBuffer<float> d_traj_;
  // The image's host copy is page-locked: a volume's [P][N][N] (4.7 MB at V1's size) comes down at the bus's
  // speed rather than through the driver's staging copies of pageable memory.
  PinnedHostBuffer<cfloat> host_image_;
  HostBuffer<cfloat> host_coils_, host_complex_;
  std::vector<DeviceBuffer<cfloat>> d_outputs_;  // the declared outputs asked for (CUDA), by name
  std::vector<std::string> output_names_;
  std::unique_ptr<gpu::Stream> stream_;  // CUDA backend
  std::vector<gpu::Event> events_;       // around the stages
  std::vector<StageTiming> timings_;
  std::atomic<int> running_{-1};            // index into timings_, -1: none
  SpokeLineSet lines_;                      // fitted once per frame when a stage needs them (CPU)
  DeviceBuffer<SpokeLine> d_lines_;         // the same on the GPU
  std::unique_ptr<NufftPlanCpu> cpu_plan_;  // the frame's point plan, when a stage needs it
  std::unique_ptr<NufftPlanCuda> cuda_plan_;
  void set_points(
      const FrameContext& frame);  // once per frame, before the stages (inside a capture on the GPU)
  bool need_lines_ = false;
  std::size_t points_off_ = 0;
  // Each stage's own state (StageSpec): its previous output and its declared buffers, on the backend.
  struct StageState {
    std::vector<HostBuffer<cfloat>> host;  // [0] the previous output when the spec keeps it, then spec.state
    std::vector<DeviceBuffer<cfloat>> device;  // the same on the CUDA backend
    View<cfloat> previous;                     // the previous output's buffer; empty when not kept
    std::vector<View<cfloat>> views;           // the declared state buffers
  };
  std::vector<StageState> state_;
  std::vector<StageSpec> specs_;
  FrameContext stage_context(const FrameContext& frame, std::size_t stage) const;
  void keep_output(std::size_t stage, View<const cfloat> out);
  void allocate_state();
  std::unique_ptr<CoilMapSource> maps_source_;
  bool reads_maps_ = false, maps_given_ = false, live_maps_ = false;
  void provide_maps(const Frame* frame, CoilMapBand* band = nullptr);
  // The image when every value is finite; else the stages' state is zeroed (a warm start from it would carry
  // the NaNs into every later frame) and NumericError names the count and the method.
  View<const cfloat> finite_or_throw(View<const cfloat> image);
  // The CUDA backend's last stage counts the image's non-finite pixels on the device (StageSpec).
  bool last_counts_non_finite() const;
  DeviceBuffer<unsigned> d_non_finite_;
  unsigned non_finite_ = 0;  // the count, copied back with the image
  void install_maps(View<const cfloat> maps);
  std::uint64_t number_ = 0;
  HostBuffer<cfloat> maps_host_;
  DeviceBuffer<cfloat> d_maps_;
  std::uint64_t maps_version_ = 0, maps_uploaded_ = 0;
  double maps_peak_ = 0;
  bool graph_allowed() const;
  Geometry g_;
  bool configured_ = false;
  gpu::Graph graph_;  // the stages captured on the first frame (CUDA backend, cuda_graph: true)
  // Changed: a kernel argument baked into graph_ (a solver's lambda, from new coil maps) is out of date.
  enum class GraphArgs { Current, Changed };
  GraphArgs graph_args_ = GraphArgs::Current;

  void enqueue_stages(const FrameContext& frame, View<const cfloat> in);
  FrameContext context(View<const float> traj);
  View<const cfloat> run_cuda();  // the stages on the uploaded input, then the image back
};

}  // namespace radstream
