// The stage contract (DESIGN.md section 3).
//
// configure(geometry, input extents, context) plans: lookup tables, FFT plans, allocation; it may be slow and
// returns the extents of the stage's output. process(in, out, context) runs the work (CPU) or enqueues it on
// the context's stream (CUDA); it must not allocate, synchronize the device or touch the default stream.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/enum_table.hpp"
#include "core/geometry.hpp"
#include "gpu/handles.hpp"
#include "noncart/nufft_plan_cpu.hpp"
#include "noncart/nufft_plan_cuda.hpp"
#include "noncart/radial_geometry.hpp"

namespace radstream {

enum class Backend { Cpu, Cuda };
inline constexpr EnumTable<Backend, 2> kBackends{"backend",
                                                 {{{Backend::Cpu, "cpu"}, {Backend::Cuda, "cuda"}}}};
inline std::string to_string(Backend b) {
  return kBackends.name(b);
}

struct Context {
  Backend backend = Backend::Cpu;
  int threads = 0;                  // CPU worker threads; 0 = all hardware threads
  int device = 0;                   // CUDA device of this chain (its worker holds a DeviceGuard)
  gpu::StreamRef stream = nullptr;  // the chain's stream (CUDA backend); never the default stream
};

// A versioned side input of a frame (coil maps, later field maps): its version changes whenever its content
// does, so that a stage can tell when to redo what it derived from it.
struct SideInput {
  std::uint64_t version = 0;  // 0: absent
  View<const cfloat> data;
  double peak_power = 0;  // coil maps: max over pixels of sum_c |S_c|^2 (1 for unit-RSS maps)
};

// What a stage sees of the frame besides its input buffer: the trajectory ([spokes][samples][2], cycles per
// pixel, at the backend's location), the products the chain derives once per frame for every stage that
// asks (the spoke lines and their angular shares, on the host), versioned side inputs, and the stage's
// own state (for warm starts and temporal regularization; empty when the stage declares none).
struct FrameContext {
  View<const float> traj;
  std::uint64_t number = 0;             // frame number within the chain (1, 2, ...)
  const SpokeLineSet* lines = nullptr;  // CPU backend, when a stage's spec reads spoke_lines
  const SpokeLine* d_lines = nullptr;   // CUDA backend: the same, [spokes] on the device
  // The NUFFT point plan with this frame's points set (the tile sort done once per frame, on the chain's
  // stream), when a stage's spec reads point_plan: one of the two, by backend.
  NufftPlanCpu* cpu_plan = nullptr;
  NufftPlanCuda* cuda_plan = nullptr;
  SideInput coil_maps;  // [coils][N][N]
  SideInput field_map;  // [N][N] (later)
  // This stage's own state (StageSpec): its output of the previous frame (same extents as its output; zeros
  // on the first frame after configure() or reset_state()), and its further state buffers. Each stage sees
  // only its own; the views are the same every frame (a captured CUDA graph keeps them).
  View<const cfloat> previous;
  std::span<const View<cfloat>> state;
  // CUDA backend, the last stage only, when its spec says counts_non_finite: a device counter (zeroed before
  // the frame) to which the kernel that writes the image adds the number of non-finite pixels it wrote.
  unsigned* d_non_finite = nullptr;
};

// What an iterative stage reports of its last frame (metrics, status line, viewer).
struct SolverStats {
  bool present = false;  // false: the stage does not iterate
  int iterations = 0;
  double residual = 0;  // |r| / |b| at the end
  double ms = 0;        // wall time of the solve (deadline mode) or 0 (then the chain's stage time counts)
  int parts = 1;        // partitions the frame's coils were split over (1: not split)
  bool stopped_early = false;      // a deadline ended the solve early (the best iterate was delivered)
  double deadline_reserve_ms = 0;  // what the deadline keeps back, learned from earlier frames' overruns
};

// The sizes a stage's memory declaration is made from, before anything is configured (the memory budget
// admits a stream or a session by them): the image matrix N, the coils, the samples per spoke and the
// window's spokes. A declaration (Registry::add_twins) counts what the stage itself allocates: its output
// buffer's worth of work, tables, vectors; the chain adds the frame's copies and its own buffers.
struct StageSizes {
  double matrix = 0, coils = 0, samples = 0, window = 0;
  static constexpr double kComplex = 8, kReal = 4;
  double image() const { return matrix * matrix * kComplex; }  // one N x N complex image
  double side(double os) const;                                // the oversampled grid's side, ceil(os N)
  double grid(double os) const { return side(os) * side(os) * coils * kComplex; }  // every coil's grid
  double samples_all() const { return window * samples * coils * kComplex; }       // the frame's samples
};

// An output a stage can give besides the one it writes every frame, on request (StageSpec::outputs): its name
// and extents.
struct DeclaredOutput {
  std::string name;
  Extents extents;
};
// The coil sensitivities a stage estimates itself, [coils][N][N] (nlinv's, of its virtual coils when it
// compresses them): what the viewer's coil view shows when the chain has no maps of its own.
inline constexpr const char* kEstimatedCoilMaps = "estimated_coil_maps";

// What a stage declares of itself (in the manner of Holoscan's OperatorSpec): what it reads of the frame
// besides its input buffer, the state it keeps from frame to frame, and its properties. The chain reads it
// once after construction (coil maps) and again after each configure() (everything, the state's extents
// included), and derives per frame only what some stage declared.
struct StageSpec {
  // Reads: the spoke lines (frame.lines / frame.d_lines), the NUFFT point plan with this frame's points set
  // (frame.cpu_plan / frame.cuda_plan), the coil maps (frame.coil_maps; the chain's coil-map source provides
  // them).
  bool spoke_lines = false;
  bool point_plan = false;
  bool coil_maps = false;
  // State: previous_output keeps a copy of this stage's own output of the previous frame (frame.previous);
  // state lists further buffers of any extents (frame.state, in this order) that the stage reads and writes
  // itself. Both belong to this stage alone, at the backend's location, zeroed at configure() and on a new
  // stream (ReconChain::reset_state), kept across frames otherwise, and at the same address every frame (a
  // captured CUDA graph keeps them).
  bool previous_output = false;
  std::vector<Extents> state;
  // Properties: in_place accepts out.data == in.data; capturable is false when process() must run on the host
  // every frame (e.g. a solver that stops at a deadline), so the chain must not capture the frame as a graph.
  bool in_place = false;
  bool capturable = true;
  // counts_non_finite: on the CUDA backend, process() counts the non-finite pixels it writes into
  // frame.d_non_finite when that is set (the image's finite check folded into the pass that writes it; the
  // chain then reads one counter instead of scanning the image on the host).
  bool counts_non_finite = false;
  // Outputs on request (their extents known after configure()): write_output() fills one from the last frame
  // when a caller asks the chain for it (ReconChain::output), never on the frame's path, so that a frame pays
  // nothing for what nobody looks at.
  std::vector<DeclaredOutput> outputs;
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual std::string name() const = 0;
  virtual StageSpec spec() const { return {}; }
  virtual Extents configure(const Geometry& g, const Extents& input, Context& ctx) = 0;
  // in: the previous stage's output (the frame's data [coils][spokes][samples] for the first stage); out: the
  // extents configure() returned. A stage whose spec().in_place accepts out.data == in.data.
  virtual void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) = 0;
  // The last frame's solver report (may wait for the device); present = false for stages that do not iterate.
  virtual SolverStats solver_stats() { return {}; }
  // What the stage is doing now, for a progress line read from another thread while process() runs (an
  // iterative solver's iteration and residual); empty when it has nothing to say.
  virtual std::string progress() const { return {}; }
  // Writes the declared output spec().outputs[index] of the last frame into `out` (its extents, at the
  // backend's location; enqueued on the context's stream); false when there is none yet (no frame since
  // configure()). Only stages that declare outputs override it.
  virtual bool write_output(std::size_t index, View<cfloat> out, Context& ctx) {
    (void)index, (void)out, (void)ctx;
    return false;
  }
};

// Throws InputError unless v has the expected extents and location (used at the top of process()).
void expect_view(const char* stage, const char* what, const View<const cfloat>& v, const Extents& ext,
                 Location loc);

}  // namespace radstream
