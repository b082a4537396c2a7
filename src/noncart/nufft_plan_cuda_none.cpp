// Built when the CUDA backend is not: the CUDA plan exists as a type, and making one says why it cannot.
#include "core/error.hpp"
#include "noncart/nufft_plan_cuda.hpp"
#include "noncart/nufft_plan_cuda3d.hpp"
#include "noncart/radial_geometry.hpp"

namespace radstream {

namespace {
[[noreturn]] void no_cuda(const char* call) {
  throw CudaError(call, "this build has no CUDA backend", __FILE__, __LINE__);
}
}  // namespace

NufftPlanCuda::NufftPlanCuda(int, const NufftKernel& kernel, std::size_t, gpu::StreamRef)
    : lut_(kernel.width, kernel.oversampling, kernel.lut_resolution) {
  no_cuda("NufftPlanCuda");
}
void NufftPlanCuda::set_points(const float*, std::size_t) {
  no_cuda("NufftPlanCuda::set_points");
}
void NufftPlanCuda::set_deterministic(bool, int) {
  no_cuda("NufftPlanCuda::set_deterministic");
}
void NufftPlanCuda::spread(const cfloat*, cfloat*, int, const SampleWeights&) {
  no_cuda("NufftPlanCuda::spread");
}
void NufftPlanCuda::interp(const cfloat*, cfloat*, int, bool) {
  no_cuda("NufftPlanCuda::interp");
}
NufftPlanCuda3d::NufftPlanCuda3d(std::array<int, 3>, const NufftKernel& kernel, std::size_t, gpu::StreamRef)
    : lut_(kernel.width, kernel.oversampling, kernel.lut_resolution) {
  no_cuda("NufftPlanCuda3d");
}
void NufftPlanCuda3d::set_points(const float*, std::size_t) {
  no_cuda("NufftPlanCuda3d::set_points");
}
void NufftPlanCuda3d::spread(const cfloat*, cfloat*, int) {
  no_cuda("NufftPlanCuda3d::spread");
}
void NufftPlanCuda3d::interp(const cfloat*, cfloat*, int) {
  no_cuda("NufftPlanCuda3d::interp");
}
void fit_spoke_lines_cuda(const float*, int, int, SpokeLine*, gpu::StreamRef) {
  no_cuda("fit_spoke_lines_cuda");
}

}  // namespace radstream
