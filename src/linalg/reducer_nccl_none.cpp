// Builds without CUDA or without nccl.h: the NCCL reduce group is not there, and says so.
#include "core/error.hpp"
#include "linalg/reducer.hpp"

namespace radstream {

bool nccl_available(std::string* why) {
  if (why) *why = "this build has no NCCL support (CUDA or nccl.h not found at configure time)";
  return false;
}

std::unique_ptr<ReduceGroup> make_nccl_reduce_group(const std::vector<int>&,
                                                    const std::vector<gpu::StreamRef>&) {
  throw ConfigError(
      "coil split over NCCL: this build has no NCCL support (CUDA or nccl.h not found at configure time)");
}

}  // namespace radstream
