// Device memory and streams behind a plain C++ interface (no CUDA types), so host code and tests can hold GPU
// buffers. Every call is checked; failures throw CudaError naming the call. In a build without CUDA, these
// throw.
#pragma once
#include <cstddef>
#include <utility>

#include "core/buffer.hpp"

namespace radstream::gpu {

void* device_alloc(std::size_t bytes);  // throws CudaError (out of memory says how much was asked)
void device_free(void* d_ptr) noexcept;
void copy_to_device(void* d_dst, const void* src, std::size_t bytes, void* stream);  // async on stream
void copy_to_host(void* dst, const void* d_src, std::size_t bytes, void* stream);    // async on stream
void copy_device(void* d_dst, const void* d_src, std::size_t bytes, void* stream);   // async on stream
void memset_device(void* d_dst, int value, std::size_t bytes, void* stream);         // async on stream
void* create_stream();  // a non-blocking stream (never the default stream)
void destroy_stream(void* stream) noexcept;
void synchronize(void* stream);

// Strided 2D copies (rows of `width` bytes, `height` rows, each side with its own pitch), async on stream.
void copy_2d_to_device(void* d_dst, std::size_t dpitch, const void* src, std::size_t spitch, std::size_t width,
                       std::size_t height, void* stream);
void copy_2d_device(void* d_dst, std::size_t dpitch, const void* d_src, std::size_t spitch, std::size_t width,
                    std::size_t height, void* stream);

// Events for timing stages on a stream, and for ordering streams.
void* create_event();
void destroy_event(void* event) noexcept;
void record_event(void* event, void* stream);
float elapsed_ms(void* start, void* stop);  // both recorded and complete
void stream_wait_event(void* stream, void* event);  // later work on stream waits for the event
void event_synchronize(void* event);                // the host waits for the event

// CUDA graphs: what is enqueued on a stream between begin_capture and end_capture is recorded, not run;
// end_capture returns the instantiated graph, which launch_graph replays on a stream.
void begin_capture(void* stream);
void* end_capture(void* stream);
void abort_capture(void* stream) noexcept;  // after a failure between begin and end
void launch_graph(void* graph, void* stream);
void destroy_graph(void* graph) noexcept;

}  // namespace radstream::gpu

namespace radstream {

// Device memory whose type says where it lives; raw pointers from it are named d_...
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(Extents ext) : ext_(ext) {
    if (ext.size()) d_ = static_cast<T*>(gpu::device_alloc(ext.size() * sizeof(T)));
  }
  ~DeviceBuffer() { gpu::device_free(d_); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ext_(o.ext_), d_(std::exchange(o.d_, nullptr)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      gpu::device_free(d_);
      ext_ = o.ext_;
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return d_; }
  const T* data() const { return d_; }
  std::size_t size() const { return ext_.size(); }
  const Extents& extents() const { return ext_; }
  View<T> view() { return {d_, ext_, Location::Device}; }
  View<const T> view() const { return {d_, ext_, Location::Device}; }

 private:
  Extents ext_;
  T* d_ = nullptr;
};

}  // namespace radstream
