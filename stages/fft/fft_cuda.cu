// cuFFT engine: one batched 2D C2C plan over the coils, made once in configure (its work area allocated
// there), bound to the pipeline's stream in process.

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"
#include "stages/fft/fft.hpp"

namespace radstream {
namespace {

class FftCufft final : public Stage {
 public:
  FftCufft(const FftParams& p, FftDirection dir) : dir_(dir) {
    if (p.engine == FftEngine::Fftw)
      throw ConfigError("fft: engine 'fftw' is the CPU engine; the CUDA backend uses cufft");
  }
  ~FftCufft() override {
    if (plan_) cufftDestroy(plan_);
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
    if (plan_) {
      cufftDestroy(plan_);
      plan_ = 0;
    }
    int n[2] = {int(input[1]), int(input[2])};
    CUFFT_CHECK(cufftPlanMany(&plan_, 2, n, nullptr, 1, n[0] * n[1], nullptr, 1, n[0] * n[1], CUFFT_C2C,
                              int(input[0])));
    CUFFT_CHECK(cufftSetStream(plan_, static_cast<cudaStream_t>(ctx.stream)));
    return input;
  }

  void process(const FrameContext&, View<const cfloat> in, View<cfloat> out, Context& ctx) override {
    prepare_fft_in_place(in, out, ext_, ctx);
    auto* d = reinterpret_cast<cufftComplex*>(out.data);
    CUFFT_CHECK(cufftExecC2C(plan_, d, d, dir_ == FftDirection::Inverse ? CUFFT_INVERSE : CUFFT_FORWARD));
  }

 private:
  FftDirection dir_;
  Extents ext_;
  cufftHandle plan_ = 0;
};

}  // namespace

void prepare_fft_in_place(View<const cfloat> in, View<cfloat> out, const Extents& ext, Context& ctx) {
  expect_view("fft", "input", in, ext, Location::Device);
  expect_view("fft", "output", out, ext, Location::Device);
  if (in.data != out.data) gpu::copy_device(out.data, in.data, out.size() * sizeof(cfloat), ctx.stream);
}

std::unique_ptr<Stage> make_fft_cuda(const FftParams& p, FftDirection dir) {
  if (p.engine == FftEngine::Custom) return make_fft_custom(dir);
  return std::make_unique<FftCufft>(p, dir);
}

}  // namespace radstream
