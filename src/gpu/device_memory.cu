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

void copy_to_device(void* d_dst, const void* src, std::size_t bytes, StreamRef stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_dst, src, bytes, cudaMemcpyHostToDevice, stream));
}

void copy_to_host(void* dst, const void* d_src, std::size_t bytes, StreamRef stream) {
  CUDA_CHECK(cudaMemcpyAsync(dst, d_src, bytes, cudaMemcpyDeviceToHost, stream));
}

void copy_device(void* d_dst, const void* d_src, std::size_t bytes, StreamRef stream) {
  CUDA_CHECK(cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDeviceToDevice, stream));
}

void copy_between_devices(void* d_dst, const void* d_src, std::size_t bytes, StreamRef stream) {
  if (bytes == 0) return;
  CUDA_CHECK(cudaMemcpyAsync(d_dst, d_src, bytes, cudaMemcpyDefault, stream));
}

void memset_device(void* d_dst, int value, std::size_t bytes, StreamRef stream) {
  CUDA_CHECK(cudaMemsetAsync(d_dst, value, bytes, stream));
}

void copy_2d_to_device(void* d_dst, std::size_t dpitch, const void* src, std::size_t spitch,
                       std::size_t width, std::size_t height, StreamRef stream) {
  CUDA_CHECK(cudaMemcpy2DAsync(d_dst, dpitch, src, spitch, width, height, cudaMemcpyHostToDevice, stream));
}

void copy_2d_device(void* d_dst, std::size_t dpitch, const void* d_src, std::size_t spitch, std::size_t width,
                    std::size_t height, StreamRef stream) {
  CUDA_CHECK(
      cudaMemcpy2DAsync(d_dst, dpitch, d_src, spitch, width, height, cudaMemcpyDeviceToDevice, stream));
}

void synchronize(StreamRef s) {
  CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace radstream::gpu
