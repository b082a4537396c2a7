// Setting a device loop's condition (gpu/loop_graph.hpp) from a kernel: one thread calls it once per pass.
#pragma once
#include <cuda_runtime.h>

#include "gpu/loop_graph.hpp"

namespace radstream::gpu {

__device__ inline void set_loop_condition(LoopHandle handle, bool again) {
  cudaGraphSetConditional(static_cast<cudaGraphConditionalHandle>(handle), again ? 1u : 0u);
}

}  // namespace radstream::gpu
