// CPU FFT: FFTW single precision, planned once in configure (batched over coils, multithreaded), executed on
// the chain's buffers with the new-array interface (all buffers are 64-byte aligned).
#include <fftw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "fft/fft.hpp"

namespace radstream {

FftEngine parse_fft_engine(const std::string& name) {
  if (name == "auto") return FftEngine::Auto;
  if (name == "fftw") return FftEngine::Fftw;
  if (name == "cufft") return FftEngine::Cufft;
  if (name == "custom") return FftEngine::Custom;
  throw ConfigError("FFT engine '" + name + "' is not one of auto, fftw, cufft, custom");
}

std::string to_string(FftEngine e) {
  switch (e) {
    case FftEngine::Auto:
      return "auto";
    case FftEngine::Fftw:
      return "fftw";
    case FftEngine::Cufft:
      return "cufft";
    case FftEngine::Custom:
      return "custom";
  }
  return "auto";
}

FftPlanner parse_fft_planner(const std::string& name) {
  if (name == "estimate") return FftPlanner::Estimate;
  if (name == "measure") return FftPlanner::Measure;
  if (name == "patient") return FftPlanner::Patient;
  throw ConfigError("FFTW planner '" + name + "' is not one of estimate, measure, patient");
}

std::string to_string(FftPlanner p) {
  switch (p) {
    case FftPlanner::Estimate:
      return "estimate";
    case FftPlanner::Measure:
      return "measure";
    case FftPlanner::Patient:
      return "patient";
  }
  return "measure";
}

void check_fft_grids(const Extents& input) {
  if (input.rank != 3 || input[1] != input[2])
    throw ConfigError("fft: expects [batch][G][G] grids, got " + input.str());
}

namespace {

std::mutex& planner_mutex() {
  static std::mutex m;
  return m;
}

}  // namespace

std::unique_lock<std::mutex> fftw_plan_lock(int threads) {
  std::unique_lock lock(planner_mutex());
  static std::once_flag threads_once;
  std::call_once(threads_once, [] { fftwf_init_threads(); });
  fftwf_plan_with_nthreads(threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency())));
  return lock;
}

namespace {

class FftCpu final : public Stage {
 public:
  FftCpu(const FftParams& p, FftDirection dir) : p_(p), dir_(dir) {
    if (p.engine != FftEngine::Auto && p.engine != FftEngine::Fftw)
      throw ConfigError("fft: engine '" + to_string(p.engine) +
                        "' needs the CUDA backend; the CPU uses fftw");
  }
  ~FftCpu() override {
    if (plan_) {
      std::lock_guard lock(planner_mutex());
      fftwf_destroy_plan(plan_);
    }
  }
  std::string name() const override { return "fft"; }
  bool in_place() const override { return true; }

  Extents configure(const Geometry&, const Extents& input, Context& ctx) override {
    check_fft_grids(input);
    ext_ = input;
    const int G = int(input[1]), batch = int(input[0]);
    HostBuffer<cfloat> scratch(input);
    const auto lock = fftw_plan_lock(ctx.threads);
    unsigned flags = p_.planner == FftPlanner::Estimate  ? FFTW_ESTIMATE
                     : p_.planner == FftPlanner::Patient ? FFTW_PATIENT
                                                         : FFTW_MEASURE;
    const int n[2] = {G, G};
    auto* buf = reinterpret_cast<fftwf_complex*>(scratch.data());
    if (plan_) fftwf_destroy_plan(plan_);
    plan_ = fftwf_plan_many_dft(2, n, batch, buf, nullptr, 1, G * G, buf, nullptr, 1, G * G,
                                dir_ == FftDirection::Inverse ? FFTW_BACKWARD : FFTW_FORWARD, flags);
    if (!plan_)
      throw ConfigError(fmt::format("fft: FFTW could not plan {} transforms of {}x{}", batch, G, G));
    return input;
  }

  void process(const StageInput& in, View<cfloat> out, Context&) override {
    expect_view("fft", "input", in.data, ext_, Location::Host);
    expect_view("fft", "output", out, ext_, Location::Host);
    if (in.data.data != out.data) std::copy(in.data.data, in.data.data + in.data.size(), out.data);
    auto* buf = reinterpret_cast<fftwf_complex*>(out.data);
    fftwf_execute_dft(plan_, buf, buf);
  }

 private:
  FftParams p_;
  FftDirection dir_;
  Extents ext_;
  fftwf_plan plan_ = nullptr;
};

}  // namespace

std::unique_ptr<Stage> make_fft_cpu(const FftParams& p, FftDirection dir) {
  return std::make_unique<FftCpu>(p, dir);
}

}  // namespace radstream
