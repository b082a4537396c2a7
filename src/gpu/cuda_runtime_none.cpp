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

#include "gpu/device_memory.hpp"

namespace radstream::gpu {
namespace {
[[noreturn]] void no_cuda(const char* call) {
  throw CudaError(call, "this build has no CUDA backend", __FILE__, __LINE__);
}
}  // namespace
void* device_alloc(std::size_t) { no_cuda("device_alloc"); }
void device_free(void*) noexcept {}
void copy_to_device(void*, const void*, std::size_t, void*) { no_cuda("copy_to_device"); }
void copy_to_host(void*, const void*, std::size_t, void*) { no_cuda("copy_to_host"); }
void copy_device(void*, const void*, std::size_t, void*) { no_cuda("copy_device"); }
void memset_device(void*, int, std::size_t, void*) { no_cuda("memset_device"); }
void* create_stream() { no_cuda("create_stream"); }
void destroy_stream(void*) noexcept {}
void synchronize(void*) { no_cuda("synchronize"); }
void* create_event() { no_cuda("create_event"); }
void destroy_event(void*) noexcept {}
void record_event(void*, void*) { no_cuda("record_event"); }
float elapsed_ms(void*, void*) { no_cuda("elapsed_ms"); }
void copy_2d_to_device(void*, std::size_t, const void*, std::size_t, std::size_t, std::size_t, void*) {
  no_cuda("copy_2d_to_device");
}
void copy_2d_device(void*, std::size_t, const void*, std::size_t, std::size_t, std::size_t, void*) {
  no_cuda("copy_2d_device");
}
void stream_wait_event(void*, void*) { no_cuda("stream_wait_event"); }
void event_synchronize(void*) { no_cuda("event_synchronize"); }
void begin_capture(void*) { no_cuda("begin_capture"); }
void* end_capture(void*) { no_cuda("end_capture"); }
void abort_capture(void*) noexcept {}
void launch_graph(void*, void*) { no_cuda("launch_graph"); }
void destroy_graph(void*) noexcept {}
}  // namespace radstream::gpu
