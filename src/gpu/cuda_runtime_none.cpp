// Built when the CUDA backend is not: no GPU, pinned memory is plain aligned memory.
#include <cstdlib>
#include <new>

#include "core/buffer.hpp"
#include "gpu/cuda_runtime.hpp"

namespace radstream::gpu {

Availability query() {
  Availability a;
  a.reason = "this build has no CUDA backend (configured with RADSTREAM_CUDA=OFF or without nvcc)";
  return a;
}

bool cuda_stages_built() {
  return false;
}

}  // namespace radstream::gpu

namespace radstream::detail {

void* pinned_alloc(std::size_t bytes) {
  return aligned_bytes(bytes);
}
void pinned_free(void* p) {
  std::free(p);
}

}  // namespace radstream::detail
