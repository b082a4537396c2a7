#include "recon/backend.hpp"

#include "core/error.hpp"
#include "gpu/cuda_runtime.hpp"

namespace radstream {

BackendDecision resolve_backend(BackendChoice choice) {
  if (choice == BackendChoice::Cpu) return {Backend::Cpu, "cpu backend requested"};
  const gpu::Availability a = gpu::query();
  const bool stages_built = gpu::cuda_stages_built();
  if (choice == BackendChoice::Cuda) {
    if (!a.available) throw ConfigError("backend cuda requested but no GPU is usable: " + a.reason);
    if (!stages_built)
      throw ConfigError("backend cuda requested: a GPU is present (" + a.device_name +
                        ") but this build has no CUDA reconstruction stages yet; use --backend cpu");
    return {Backend::Cuda, "cuda backend requested, using " + a.device_name};
  }
  if (a.available && stages_built) return {Backend::Cuda, "auto: GPU found, using " + a.device_name};
  if (a.available) return {Backend::Cpu, "auto: GPU found but no CUDA stages are built; using the CPU"};
  return {Backend::Cpu, "auto: no GPU (" + a.reason + "); using the CPU"};
}

}  // namespace radstream
