// CPU FFT: FFTW single precision, planned once in configure (batched over coils, multithreaded), executed on
// the chain's buffers with the new-array interface (all buffers are 64-byte aligned).
#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "stages/fft/fft.hpp"

namespace radstream {

void check_fft_grids(const Extents& input) {
  if (input.rank != 3 || input[1] != input[2])
    throw ConfigError("fft: expects [batch][G][G] grids, got " + input.str());
}

namespace {

class FftCpu final : public Stage {
 public:
  FftCpu(const FftParams& p, FftDirection dir) : p_(p), dir_(dir) {
    if (p.engine != FftEngine::Auto && p.engine != FftEngine::Fftw)
      throw ConfigError("fft: engine '" + to_string(p.engine) +
                        "' needs the CUDA backend; the CPU uses fftw");
  }
  std::string name() const override { return dir_ == FftDirection::Inverse ? "fft" : "fft_forward"; }
  StageSpec spec() const override {
    StageSpec s;
    s.in_place = true;
    return s;
  }

  Extents configure(const Geometry&, const Extents& input, Context& ctx) override {
    check_fft_grids(input);
    ext_ = input;
    const int G = int(input[1]), batch = int(input[0]);
    plan_ = FftwPlan({G, G}, batch, dir_, p_.planner, ctx.threads);
    return input;
  }

  void process(const FrameContext&, View<const cfloat> in, View<cfloat> out, Context&) override {
    expect_view("fft", "input", in, ext_, Location::Host);
    expect_view("fft", "output", out, ext_, Location::Host);
    if (in.data != out.data) std::copy(in.data, in.data + in.size(), out.data);
    plan_.execute(out.data);
  }

 private:
  FftParams p_;
  FftDirection dir_;
  Extents ext_;
  FftwPlan plan_;
};

}  // namespace

std::unique_ptr<Stage> make_fft_cpu(const FftParams& p, FftDirection dir) {
  return std::make_unique<FftCpu>(p, dir);
}

}  // namespace radstream
