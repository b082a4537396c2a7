#include <cuda_runtime.h>

#include <cstdlib>
#include <new>

#include "gpu/cuda_runtime.hpp"
#include "gpu/pinned_buffer.hpp"

namespace radstream::gpu {

Availability query() {
  Availability a;
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    a.reason = cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error
    return a;
  }
  if (n == 0) {
    a.reason = "no CUDA device found";
    return a;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    a.reason = "cudaGetDeviceProperties failed";
    cudaGetLastError();
    return a;
  }
  a.available = true;
  cudaDriverGetVersion(&a.driver_version);
  cudaRuntimeGetVersion(&a.runtime_version);
  a.device_count = n;
  a.device_name = prop.name;
  return a;
}

std::size_t free_memory(int device) {
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) {
    cudaGetLastError();
    free = 0;
  }
  cudaSetDevice(previous);
  return free;
}

bool cuda_stages_built() {
  return true;
}

}  // namespace radstream::gpu

namespace radstream::detail {

// Page-locked when a GPU is usable; plain aligned memory otherwise (so the CPU path works without a driver).
// A one-byte tag before the block records which allocator owns it.
void* pinned_alloc(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  constexpr std::size_t kHead = 64;
  void* raw = nullptr;
  bool pinned = false;
  if (cudaHostAlloc(&raw, bytes + kHead, cudaHostAllocDefault) == cudaSuccess) {
    pinned = true;
  } else {
    cudaGetLastError();
    raw = std::aligned_alloc(64, (bytes + kHead + 63) / 64 * 64);
    if (!raw) throw std::bad_alloc();
  }
  static_cast<unsigned char*>(raw)[0] = pinned ? 1 : 0;
  return static_cast<unsigned char*>(raw) + kHead;
}

void pinned_free(void* p) {
  if (!p) return;
  unsigned char* raw = static_cast<unsigned char*>(p) - 64;
  if (raw[0] == 1)
    cudaFreeHost(raw);
  else
    std::free(raw);
}

}  // namespace radstream::detail
