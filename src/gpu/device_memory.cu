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

void memset_device(void* d_dst, int value, std::size_t bytes, void* stream) {
  CUDA_CHECK(cudaMemsetAsync(d_dst, value, bytes, static_cast<cudaStream_t>(stream)));
}

void copy_2d_to_device(void* d_dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                       std::size_t height, void* stream) {
  CUDA_CHECK(cudaMemcpy2DAsync(d_dst, dpitch, src, spitch, width, height, cudaMemcpyHostToDevice,
                               static_cast<cudaStream_t>(stream)));
}

void copy_2d_device(void* d_dst, std::size_t dpitch, const void* d_src, std::size_t spitch, std::size_t width,
                    std::size_t height, void* stream) {
  CUDA_CHECK(cudaMemcpy2DAsync(d_dst, dpitch, d_src, spitch, width, height, cudaMemcpyDeviceToDevice,
                               static_cast<cudaStream_t>(stream)));
}

void stream_wait_event(void* stream, void* event) {
  CUDA_CHECK(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0));
}

void event_synchronize(void* event) {
  CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event)));
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
  auto stream = static_cast<cudaStream_t>(s);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  // Inside a capture the record becomes an event node of the graph, so per-stage timing survives replay.
  if (status == cudaStreamCaptureStatusActive)
    CUDA_CHECK(cudaEventRecordWithFlags(static_cast<cudaEvent_t>(e), stream, cudaEventRecordExternal));
  else
    CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(e), stream));
}

void begin_capture(void* s) {
  CUDA_CHECK(cudaStreamBeginCapture(static_cast<cudaStream_t>(s), cudaStreamCaptureModeThreadLocal));
}

void* end_capture(void* s) {
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(static_cast<cudaStream_t>(s), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  CUDA_CHECK(e);
  return exec;
}

void abort_capture(void* s) noexcept {
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(static_cast<cudaStream_t>(s), &graph) == cudaSuccess && graph)
    cudaGraphDestroy(graph);
  cudaGetLastError();  // clear the error the failed capture left
}

void launch_graph(void* g, void* s) {
  CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(g), static_cast<cudaStream_t>(s)));
}

void destroy_graph(void* g) noexcept {
  if (g) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(g));
}

float elapsed_ms(void* a, void* b) {
  float ms = 0.f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(a), static_cast<cudaEvent_t>(b)));
  return ms;
}

}  // namespace radstream::gpu
