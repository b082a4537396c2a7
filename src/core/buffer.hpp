// Owning buffers whose type says where the memory lives, and non-owning views with a shape.
// Host buffers are 64-byte aligned (FFTW and SIMD friendly). Pinned-host and device buffers live in the GPU
// layer (gpu/pinned_buffer.hpp, gpu/device_memory.hpp), which carries no CUDA types in its headers either.
#pragma once
#include <array>
#include <complex>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>

#include "core/error.hpp"

namespace radstream {

using cfloat = std::complex<float>;

enum class Location { Host, PinnedHost, Device };

// Up to four extents, the first varying slowest (row-major: [coils][spokes][samples], [coils][y][x]).
struct Extents {
  std::array<std::size_t, 4> d{1, 1, 1, 1};
  int rank = 0;

  Extents() = default;
  Extents(std::initializer_list<std::size_t> dims) {
    if (dims.size() > 4) throw InputError("Extents: at most 4 dimensions");
    for (auto v : dims) d[rank++] = v;
  }
  std::size_t size() const {
    std::size_t n = 1;
    for (int i = 0; i < rank; ++i) n *= d[i];
    return n;
  }
  std::size_t operator[](int i) const { return d[i]; }
  bool operator==(const Extents& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (d[i] != o.d[i]) return false;
    return true;
  }
  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < rank; ++i) {
      if (i) s += ' ';
      s += std::to_string(d[i]);
    }
    return s + "]";
  }
};

// A non-owning typed view of memory at a known location.
template <class T>
struct View {
  T* data = nullptr;
  Extents ext;
  Location loc = Location::Host;

  std::size_t size() const { return ext.size(); }
  bool empty() const { return data == nullptr || size() == 0; }
  std::span<T> span() const { return {data, size()}; }
  // A view of mutable data reads as a view of const data (a template, so that a view of const data, which
  // already is one, declares no conversion to itself: nvcc warns such a one would never be called).
  template <class U = T>
  requires(!std::is_const_v<U>) operator View<const U>() const { return {data, ext, loc}; }
};

namespace detail {
struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
inline void* aligned_bytes(std::size_t bytes) {
  if (bytes == 0) return nullptr;
  const std::size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace detail

// Host memory, zero-initialised, 64-byte aligned.
template <class T>
class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(Extents ext) : ext_(ext) {
    mem_.reset(static_cast<T*>(detail::aligned_bytes(ext.size() * sizeof(T))));
    if (ext.size()) std::memset(static_cast<void*>(mem_.get()), 0, ext.size() * sizeof(T));
  }
  T* data() { return mem_.get(); }
  const T* data() const { return mem_.get(); }
  std::size_t size() const { return ext_.size(); }
  const Extents& extents() const { return ext_; }
  T& operator[](std::size_t i) { return mem_.get()[i]; }
  const T& operator[](std::size_t i) const { return mem_.get()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  View<T> view() { return {data(), ext_, Location::Host}; }
  View<const T> view() const { return {data(), ext_, Location::Host}; }

 private:
  Extents ext_;
  std::unique_ptr<T, detail::AlignedFree> mem_;
};

}  // namespace radstream
