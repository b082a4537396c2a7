#include "recon/gpu_warm_up.hpp"

#include <chrono>

#include "fft/cufft_plan.hpp"
#include "gpu/handles.hpp"

namespace radstream {

double warm_up_gpu_libraries() {
  const auto t0 = std::chrono::steady_clock::now();
  const gpu::Stream stream;
  { const CufftPlan plan({64, 64}, 2, stream.get()); }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace radstream
