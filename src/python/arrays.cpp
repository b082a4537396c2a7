#include "python/arrays.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace radstream::python {

CArray as_bart_array(const py::handle& obj, const char* name) {
  if (obj.is_none()) throw py::type_error(fmt::format("{}: an array is needed, not None", name));
  CArray a = CArray::ensure(obj);
  if (!a) {
    PyErr_Clear();
    throw py::type_error(fmt::format("{}: cannot be read as a complex array (a {} was given)", name,
                                     std::string(py::str(obj.get_type().attr("__name__")))));
  }
  return a;
}

std::vector<long> bart_dims(const CArray& a) {
  std::vector<long> d;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) d.push_back(long(a.shape(i)));
  if (d.empty()) d.push_back(1);
  return d;
}

CflArray to_cfl(const CArray& a) {
  CflArray c;
  c.dims = bart_dims(a);
  c.data.resize(std::size_t(a.size()));
  if (a.size() > 0) std::memcpy(c.data.data(), a.data(), c.data.size() * sizeof(cfloat));
  return c;
}

py::array_t<std::complex<float>> new_bart_array(std::vector<long> dims) {
  while (dims.size() > 1 && dims.back() == 1) dims.pop_back();  // as cfl.readcfl returns them
  std::vector<py::ssize_t> shape(dims.begin(), dims.end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t s = sizeof(std::complex<float>);
  for (std::size_t i = 0; i < shape.size(); ++i) {
    strides[i] = s;
    s *= std::max<py::ssize_t>(shape[i], 1);
  }
  return py::array_t<std::complex<float>>(shape, strides);
}

py::array_t<std::complex<float>> from_bart(const std::vector<long>& dims, const std::vector<cfloat>& values) {
  auto out = new_bart_array(dims);
  if (std::size_t(out.size()) != values.size())
    throw std::logic_error(fmt::format("an array of {} values for {} places", values.size(), out.size()));
  if (!values.empty()) std::memcpy(out.mutable_data(), values.data(), values.size() * sizeof(cfloat));
  return out;
}

}  // namespace radstream::python
