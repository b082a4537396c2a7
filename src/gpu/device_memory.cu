#include <string>

#include "gpu/cuda_check.cuh"
#include "gpu/device_memory.hpp"

namespace radstream::gpu {

void* device_alloc(std::size_t bytes) {
  void* d = nullptr;
  const cudaError_t e = cudaMalloc(&d, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    throw CudaError("cudaMalloc",
                    std::string(cudaGetErrorString(e)) + " (" + std::to_string(bytes >> 20) + " MiB asked, " +
                        std::to_string(free_b >> 20) + " MiB free of " + std::to_string(total_b >> 20) +
                        " MiB)",
                    __FILE__, __LINE__);
  }
  return d;
}

void device_free(void* d) noexcept {
  if (d) cudaFree(d);
}

void copy_to_device(void* d_dst, const void* src, std::size_t bytes, void* stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_dst, src, bytes, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(stream)));
}

void copy_to_host(void* dst, const void* d_src, std::size_t bytes, void* stream) {
  CUDA_CHECK(cudaMemcpyAsync(dst, d_src, bytes, cudaMemcpyDeviceToHost, static_cast<cudaStream_t>(stream)));
}

void copy_device(void* d_dst, const void* d_src, std::size_t bytes, void* stream) {
  CUDA_CHECK(
      cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
}

void* create_stream() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

void destroy_stream(void* s) noexcept {
  if (s) cudaStreamDestroy(static_cast<cudaStream_t>(s));
}

void synchronize(void* s) {
  CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(s)));
}

void* create_event() {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

void destroy_event(void* e) noexcept {
  if (e) cudaEventDestroy(static_cast<cudaEvent_t>(e));
}

void record_event(void* e, void* s) {
  CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), static_cast<cudaStream_t>(s)));
}

float elapsed_ms(void* a, void* b) {
  float ms = 0.f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a), static_cast<cudaEvent_t>(b)));
  return ms;
}

}  // namespace radstream::gpu
