// cuFFT plans as a library for stages and operators (host header, no CUDA types): a batch of 2D or 3D complex
// transforms planned once (work area allocated then) and bound to one stream; executed in place.
// Unnormalized; inverse is exp(+2 pi i ...), forward exp(-2 pi i ...). CUDA builds only.
#pragma once
#include <vector>

#include "core/buffer.hpp"
#include "fft/fftw_plan.hpp"
#include "gpu/handles.hpp"

namespace radstream {

class CufftPlan {
 public:
  CufftPlan() = default;
  // dims slowest first ({G, G} or {Gz, Gy, Gx}); stream: cudaStream_t. Throws CudaError.
  CufftPlan(std::vector<int> dims, int batch, gpu::StreamRef stream);
  ~CufftPlan();
  CufftPlan(CufftPlan&& o) noexcept;
  CufftPlan& operator=(CufftPlan&& o) noexcept;
  CufftPlan(const CufftPlan&) = delete;
  CufftPlan& operator=(const CufftPlan&) = delete;

  void execute(cfloat* d_data, FftDirection dir) const;
  // Out of place (d_in is left as it was).
  void execute(const cfloat* d_in, cfloat* d_out, FftDirection dir) const;

 private:
  int plan_ = 0;  // cufftHandle
  bool made_ = false;
};

}  // namespace radstream
