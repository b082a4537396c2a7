// Device memory behind a plain C++ interface (no CUDA types), so host code and tests can hold GPU buffers;
// streams, events and graphs are the typed handles of gpu/handles.hpp. Every call is checked; failures throw
// CudaError naming the call. In a build without CUDA, these throw.
#pragma once
#include <cstddef>
#include <utility>

#include "core/buffer.hpp"
#include "gpu/handles.hpp"

namespace radstream::gpu {

void* device_alloc(std::size_t bytes);  // throws CudaError (out of memory says how much was asked)
void device_free(void* d_ptr) noexcept;
void copy_to_device(void* d_dst, const void* src, std::size_t bytes, StreamRef stream);  // async on stream
void copy_to_host(void* dst, const void* d_src, std::size_t bytes, StreamRef stream);    // async on stream
void copy_device(void* d_dst, const void* d_src, std::size_t bytes, StreamRef stream);   // async on stream
// Device memory of any two GPUs (unified addressing: a peer copy where the GPUs differ); async on stream.
void copy_between_devices(void* d_dst, const void* d_src, std::size_t bytes, StreamRef stream);
void memset_device(void* d_dst, int value, std::size_t bytes, StreamRef stream);  // async on stream
void synchronize(StreamRef stream);

// Strided 2D copies (rows of `width` bytes, `height` rows, each side with its own pitch), async on stream.
void copy_2d_to_device(void* d_dst, std::size_t dpitch, const void* src, std::size_t spitch,
                       std::size_t width, std::size_t height, StreamRef stream);
void copy_2d_device(void* d_dst, std::size_t dpitch, const void* d_src, std::size_t spitch, std::size_t width,
                    std::size_t height, StreamRef stream);

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
