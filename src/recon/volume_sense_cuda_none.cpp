// The build without CUDA: the volume CG-SENSE on the GPU is not built (the CPU backend never asks for it).
#include "core/error.hpp"
#include "recon/volume_sense.hpp"

namespace radstream {

std::unique_ptr<VolumeSense> make_volume_sense_cuda(const VolumeSenseShape&, const CgSenseParams&,
                                                    const NufftKernel&, gpu::StreamRef) {
  throw ConfigError("cg-sense over a volume on the GPU: this build has no CUDA");
}

}  // namespace radstream
