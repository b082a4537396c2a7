// Programmatic dependent launch (compute capability 9.0): a kernel launched with launch_dependent() may be
// scheduled while the kernel before it in the stream is still draining its last wave, instead of after it
// has finished and its completion has gone back through the front end (a few microseconds a boundary on a
// frame of short kernels). The contract, for every kernel launched this way:
//  - it calls wait_for_previous() before its first access to global memory that an earlier kernel of the
//    stream writes or reads (the wait returns when those kernels have finished and their writes are visible;
//    anything before it may only touch registers and shared memory);
//  - a kernel may call allow_dependents() once it is past its own wait: the next kernel, if it was launched
//    with launch_dependent(), may then be scheduled as soon as every block of this one has called it or
//    exited. Calling it before the wait would let a chain of dependents start before this kernel's own
//    inputs are complete; they would still be correct (each waits), but would hold SM slots for nothing.
// On a device before 9.0, or when the previous operation in the stream is not a kernel (a copy, an event),
// the launch is an ordinary stream-ordered one and both calls do nothing. In a captured CUDA graph the
// launch becomes a programmatic edge. RADSTREAM_DEPENDENT_LAUNCH=0 in the environment makes every such launch
// an ordinary one (read once per process; the benchmarks' before/after in one binary, and a way out should a
// driver misbehave). Included only by .cu files.
#pragma once
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "gpu/cuda_check.cuh"

namespace radstream::gpu {

__device__ __forceinline__ void wait_for_previous() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

inline bool dependent_launch_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("RADSTREAM_DEPENDENT_LAUNCH");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

// Whether the current device has programmatic dependent launch (compute capability 9.0 or later): asked at
// each launch (two cheap runtime queries), so that a device before Hopper gets ordinary launches and no
// process-wide state is kept.
inline bool device_has_dependent_launch() {
  int device = 0, major = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice", __FILE__, __LINE__);
  check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
             "cudaDeviceGetAttribute(compute capability)", __FILE__, __LINE__);
  return major >= 9;
}

// kernel<<<grid, block, smem, stream>>>(args...), allowed to overlap the previous kernel of the stream (see
// above); checked like every launch.
template <class... Params, class... Args>
void launch_dependent(const char* name, void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t smem,
                      cudaStream_t stream, Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = dependent_launch_enabled() && device_has_dependent_launch() ? 1 : 0;
  check_cuda(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...), name, __FILE__, __LINE__);
}

}  // namespace radstream::gpu
