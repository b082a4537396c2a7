// Page-locked host memory for asynchronous uploads (cudaHostAlloc in a CUDA build; aligned pageable memory
// otherwise), 64-byte aligned and zero-initialised.
#pragma once
#include <cstring>
#include <memory>

#include "core/buffer.hpp"

namespace radstream {

namespace detail {
// Pinned (page-locked) host memory: cudaHostAlloc with the CUDA backend, else aligned pageable memory.
void* pinned_alloc(std::size_t bytes);
void pinned_free(void* p);
struct PinnedFree {
  void operator()(void* p) const { pinned_free(p); }
};
}  // namespace detail

// Page-locked host memory for asynchronous uploads.
template <class T>
class PinnedHostBuffer {
 public:
  PinnedHostBuffer() = default;
  explicit PinnedHostBuffer(Extents ext) : ext_(ext) {
    mem_.reset(static_cast<T*>(detail::pinned_alloc(ext.size() * sizeof(T))));
    if (ext.size()) std::memset(static_cast<void*>(mem_.get()), 0, ext.size() * sizeof(T));
  }
  T* data() { return mem_.get(); }
  const T* data() const { return mem_.get(); }
  std::size_t size() const { return ext_.size(); }
  const Extents& extents() const { return ext_; }
  View<T> view() { return {data(), ext_, Location::PinnedHost}; }
  View<const T> view() const { return {data(), ext_, Location::PinnedHost}; }

 private:
  Extents ext_;
  std::unique_ptr<T, detail::PinnedFree> mem_;
};

}  // namespace radstream
