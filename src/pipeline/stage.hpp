// The stage contract (DESIGN.md section 3).
//
// configure(geometry, input extents, context) plans: lookup tables, FFT plans, allocation; it may be slow and
// returns the extents of the stage's output. process(in, out, context) runs the work (CPU) or enqueues it on
// the context's stream (CUDA); it must not allocate, synchronize the device or touch the default stream.
#pragma once
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "core/geometry.hpp"

namespace radstream {

enum class Backend { Cpu, Cuda };
std::string to_string(Backend b);

struct Context {
  Backend backend = Backend::Cpu;
  int threads = 0;         // CPU worker threads; 0 = all hardware threads
  void* stream = nullptr;  // cudaStream_t of this pipeline (CUDA backend)
};

// A stage's input: complex data and, for stages that need it, the frame's trajectory ([spokes][samples][2],
// cycles/pixel) at the same location. The output is a View<cfloat> of the extents configure() returned; a
// stage whose in_place() is true accepts out.data == in.data.data.
struct StageInput {
  View<const cfloat> data;
  View<const float> traj;
};

class Stage {
 public:
  virtual ~Stage() = default;
  virtual std::string name() const = 0;
  virtual Extents configure(const Geometry& g, const Extents& input, Context& ctx) = 0;
  virtual void process(const StageInput& in, View<cfloat> out, Context& ctx) = 0;
  // True when process may be called with out.data == in.data.data.
  virtual bool in_place() const { return false; }
};

// Throws InputError unless v has the expected extents and location (used at the top of process()).
void expect_view(const char* stage, const char* what, const View<const cfloat>& v, const Extents& ext,
                 Location loc);

}  // namespace radstream
