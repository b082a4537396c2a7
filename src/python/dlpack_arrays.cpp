#include "python/dlpack_arrays.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace radstream::python {

DlpackArray::DlpackArray(const pybind11::capsule& capsule, const char* name) {
  PyObject* c = capsule.ptr();
  if (!PyCapsule_IsValid(c, "dltensor"))
    throw ConfigError(fmt::format("{}: not an unused DLPack capsule (pass tensor.__dlpack__())", name));
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(c, "dltensor"));
  const DLTensor& t = m->dl_tensor;
  const auto fail = [&](const std::string& why) { throw ConfigError(fmt::format("{}: {}", name, why)); };
  if (t.device.device_type != kDLCUDA)
    fail(fmt::format("DLPack device type {} is not CUDA", int(t.device.device_type)));
  if (t.dtype.code != kDLComplex || t.dtype.bits != 64 || t.dtype.lanes != 1)
    fail(fmt::format("DLPack type code {}, {} bits is not complex64", int(t.dtype.code), int(t.dtype.bits)));
  std::int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {  // contiguous (row-major) or no strides given
    if (t.strides && t.shape[i] > 1 && t.strides[i] != stride)
      fail("the tensor is not contiguous (call .contiguous())");
    stride *= t.shape[i];
  }
  size_ = stride;
  // Taken over only once it is known to be usable (a refused capsule stays the caller's to free).
  PyCapsule_SetName(c, "used_dltensor");
  t_ = m;
}

DlpackArray::~DlpackArray() {
  if (t_ && t_->deleter) t_->deleter(t_);
}

cfloat* DlpackArray::data() const {
  return reinterpret_cast<cfloat*>(static_cast<char*>(t_->dl_tensor.data) + t_->dl_tensor.byte_offset);
}

}  // namespace radstream::python
