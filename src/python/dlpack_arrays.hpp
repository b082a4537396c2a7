// Device arrays from DLPack (the protocol PyTorch, CuPy and JAX tensors export through __dlpack__): a capsule
// named "dltensor" holding a DLManagedTensor, taken over here (renamed "used_dltensor", its deleter called
// when this object goes). Only what the NUFFT can use directly is taken: complex64, contiguous, on a CUDA
// device; anything else is a ValueError naming the argument and what it is.
#pragma once
#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "core/buffer.hpp"

namespace radstream::python {

class DlpackArray {
 public:
  // Throws ConfigError naming `name`: not a DLPack capsule, already used, not CUDA, not complex64, strided.
  DlpackArray(const pybind11::capsule& capsule, const char* name);
  ~DlpackArray();
  DlpackArray(const DlpackArray&) = delete;
  DlpackArray& operator=(const DlpackArray&) = delete;
  cfloat* data() const;
  std::int64_t size() const { return size_; }
  int device() const { return t_->dl_tensor.device.device_id; }

 private:
  DLManagedTensor* t_ = nullptr;
  std::int64_t size_ = 1;
};

}  // namespace radstream::python
