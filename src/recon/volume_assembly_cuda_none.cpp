// A build without CUDA: the GPU's volume assembly is absent (the backend resolves to the CPU before it is
// asked for).
#include "core/error.hpp"
#include "recon/volume_assembly_cuda.hpp"

namespace radstream {

struct VolumeAssemblerCuda::Impl {};

VolumeAssemblerCuda::VolumeAssemblerCuda(const Geometry&, int, int) {
  throw CudaError("VolumeAssemblerCuda", "this build has no CUDA backend", __FILE__, __LINE__);
}
VolumeAssemblerCuda::~VolumeAssemblerCuda() = default;
bool VolumeAssemblerCuda::assemble(int, const VolumeChain::Gather&, std::vector<SpokeHeader>&,
                                   VolumeAssembler::Counts&) {
  return false;
}
const cfloat* VolumeAssemblerCuda::frame(int) const {
  return nullptr;
}
const float* VolumeAssemblerCuda::traj() const {
  return nullptr;
}
std::size_t VolumeAssemblerCuda::frame_values() const {
  return 0;
}
std::size_t VolumeAssemblerCuda::traj_values() const {
  return 0;
}
void VolumeAssemblerCuda::download(int, Frame&) const {}

}  // namespace radstream
