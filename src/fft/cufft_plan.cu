#include <utility>

#include "fft/cufft_plan.hpp"
#include "gpu/cuda_check.cuh"

namespace radstream {

CufftPlan::CufftPlan(std::vector<int> dims, int batch, gpu::StreamRef stream) {
  int dist = 1;
  for (int d : dims) dist *= d;
  cufftHandle h = 0;
  CUFFT_CHECK(
      cufftPlanMany(&h, int(dims.size()), dims.data(), nullptr, 1, dist, nullptr, 1, dist, CUFFT_C2C, batch));
  plan_ = int(h);
  made_ = true;
  CUFFT_CHECK(cufftSetStream(h, static_cast<cudaStream_t>(stream)));
}

CufftPlan::~CufftPlan() {
  if (made_) cufftDestroy(cufftHandle(plan_));
}

CufftPlan::CufftPlan(CufftPlan&& o) noexcept : plan_(o.plan_), made_(std::exchange(o.made_, false)) {}

CufftPlan& CufftPlan::operator=(CufftPlan&& o) noexcept {
  if (this != &o) {
    if (made_) cufftDestroy(cufftHandle(plan_));
    plan_ = o.plan_;
    made_ = std::exchange(o.made_, false);
  }
  return *this;
}

void CufftPlan::execute(cfloat* d_data, FftDirection dir) const {
  auto* d = reinterpret_cast<cufftComplex*>(d_data);
  CUFFT_CHECK(
      cufftExecC2C(cufftHandle(plan_), d, d, dir == FftDirection::Inverse ? CUFFT_INVERSE : CUFFT_FORWARD));
}

void CufftPlan::execute(const cfloat* d_in, cfloat* d_out, FftDirection dir) const {
  // cuFFT does not write its input in an out-of-place C2C transform.
  auto* in = const_cast<cufftComplex*>(reinterpret_cast<const cufftComplex*>(d_in));
  CUFFT_CHECK(cufftExecC2C(cufftHandle(plan_), in, reinterpret_cast<cufftComplex*>(d_out),
                           dir == FftDirection::Inverse ? CUFFT_INVERSE : CUFFT_FORWARD));
}

}  // namespace radstream
