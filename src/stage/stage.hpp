// The stage contract (DESIGN.md section 3).
//
// configure(geometry, input extents, context) plans: lookup tables, FFT plans, allocation; it may be slow and
// returns the extents of the stage's output. process(in, out, context) runs the work (CPU) or enqueues it on
// the context's stream (CUDA); it must not allocate, synchronize the device or touch the default stream.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "core/enum_table.hpp"
#include "core/geometry.hpp"
#include "gpu/handles.hpp"
#include "noncart/nufft_plan_cpu.hpp"
#include "noncart/nufft_plan_cuda.hpp"
#include "noncart/radial_geometry.hpp"

namespace radstream {

enum class Backend { Cpu, Cuda };
inline constexpr EnumTable<Backend, 2> kBackends{"backend", {{{Backend::Cpu, "cpu"}, {Backend::Cuda, "cuda"}}}};
inline std::string to_string(Backend b) { return kBackends.name(b); }

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
  double peak_power = 0;      // coil maps: max over pixels of sum_c |S_c|^2 (1 for unit-RSS maps)
};

// What a stage sees of the frame besides its input buffer: the trajectory ([spokes][samples][2], cycles per
// pixel, at the backend's location), the products the chain derives once per frame for every stage that
// asks (the spoke lines and their angular shares, on the host), versioned side inputs, and the previous
// frame's result (for warm starts; empty on the first frame or when no stage asks for it).
struct FrameContext {
  View<const float> traj;
  std::uint64_t number = 0;                // frame number within the chain (1, 2, ...)
  const SpokeLineSet* lines = nullptr;     // CPU backend, when a stage needs_spoke_lines()
  const SpokeLine* d_lines = nullptr;      // CUDA backend: the same, [spokes] on the device
  // The NUFFT point plan with this frame's points set (the tile sort done once per frame, on the chain's
  // stream), when a stage needs_point_plan(): one of the two, by backend.
  NufftPlanCpu* cpu_plan = nullptr;
  NufftPlanCuda* cuda_plan = nullptr;
  SideInput coil_maps;                     // [coils][N][N]
  SideInput field_map;                     // [N][N] (later)
  // The output of the previous frame of the stage that needs_previous() (same extents as its output, at the
  // backend's location); zeros on the first frame after configure(). A solver starts from it. The view is
  // the same every frame (a captured CUDA graph keeps it).
  View<const cfloat> previous;
};

// What an iterative stage reports of its last frame (metrics, status line, viewer).
struct SolverStats {
  bool present = false;  // false: the stage does not iterate
  int iterations = 0;
  double residual = 0;   // |r| / |b| at the end
  double ms = 0;         // wall time of the solve (deadline mode) or 0 (then the chain's stage time counts)
  int parts = 1;         // partitions the frame's coils were split over (1: not split)
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual std::string name() const = 0;
  virtual Extents configure(const Geometry& g, const Extents& input, Context& ctx) = 0;
  // in: the previous stage's output (the frame's data [coils][spokes][samples] for the first stage); out: the
  // extents configure() returned. A stage whose in_place() is true accepts out.data == in.data.
  virtual void process(const FrameContext& frame, View<const cfloat> in, View<cfloat> out, Context& ctx) = 0;
  virtual bool in_place() const { return false; }
  // The chain fills frame.lines (CPU) or frame.d_lines (CUDA) when a stage says it needs them.
  virtual bool needs_spoke_lines() const { return false; }
  // The chain makes one NUFFT plan (the recipe's kernel and grid) and sets its points once per frame.
  virtual bool needs_point_plan() const { return false; }
  // The chain keeps a copy of each frame's output for the next frame's context (warm starts).
  // The chain keeps a copy of this stage's output of the previous frame for the next frame's context (warm
  // starts).
  virtual bool needs_previous() const { return false; }
  // The stage reads frame.coil_maps (the chain's caller must provide them: given or estimated).
  virtual bool needs_coil_maps() const { return false; }
  // False when process() must run on the host every frame (e.g. a solver that stops at a deadline), so the
  // chain must not capture the frame as a CUDA graph.
  virtual bool capturable() const { return true; }
  // The last frame's solver report (may wait for the device); present = false for stages that do not iterate.
  virtual SolverStats solver_stats() { return {}; }
};

// Throws InputError unless v has the expected extents and location (used at the top of process()).
void expect_view(const char* stage, const char* what, const View<const cfloat>& v, const Extents& ext,
                 Location loc);

}  // namespace radstream
