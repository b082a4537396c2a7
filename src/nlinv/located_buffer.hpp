// A complex buffer on the host or on the device, chosen at run time (NLINV's vectors live where its model
// does).
#pragma once
#include "core/buffer.hpp"
#include "gpu/device_memory.hpp"

namespace radstream {

class LocatedBuffer {
 public:
  LocatedBuffer() = default;
  LocatedBuffer(std::size_t n, Location loc) {
    if (loc == Location::Device) {
      device_ = DeviceBuffer<cfloat>(Extents{n});
      d_ = device_.data();
    } else {
      host_ = HostBuffer<cfloat>(Extents{n});
      d_ = host_.data();
    }
    n_ = n;
  }
  cfloat* data() { return d_; }
  const cfloat* data() const { return d_; }
  std::size_t size() const { return n_; }

 private:
  HostBuffer<cfloat> host_;
  DeviceBuffer<cfloat> device_;
  cfloat* d_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace radstream
