// Builds without CUDA: the GPU coil split is not there, and says so.
#include "core/error.hpp"
#include "noncart/coil_split_sense.hpp"

namespace radstream {

std::unique_ptr<CoilSplitSense> make_coil_split_sense_cuda(int, int, std::size_t, const NufftKernel&,
                                                           const CoilSplitOptions&, const std::vector<int>&) {
  throw ConfigError("coil split on GPUs: this build has no CUDA backend");
}

}  // namespace radstream
