// The parts of the Python module (module.cpp puts them together).
#pragma once
#include <pybind11/pybind11.h>

namespace radstream::python {
void bind_nufft(pybind11::module_& m);
void bind_recon(pybind11::module_& m);
void bind_mrd(pybind11::module_& m);
void bind_stream(pybind11::module_& m);
void bind_mrd_stream(pybind11::module_& m);
}  // namespace radstream::python
