// numpy arrays in BART's dimension order, as BART's Python `cfl.readcfl` returns them: complex64 in Fortran
// order (dimension 0 fastest), trailing singleton dimensions dropped. An input already in that layout is
// used where it lies (no copy); any other dtype or order is converted once.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <complex>
#include <string>
#include <vector>

#include "io/cfl.hpp"

namespace radstream::python {

namespace py = pybind11;
using CArray = py::array_t<std::complex<float>, py::array::f_style | py::array::forcecast>;

// `obj` as a Fortran-ordered complex64 array; `name` names the argument in the TypeError/ValueError.
CArray as_bart_array(const py::handle& obj, const char* name);
// BART's extents of an array (at least one; a 0-d array is [1]).
std::vector<long> bart_dims(const CArray& a);
// A copy into radstream's CFL array (BART's order).
CflArray to_cfl(const CArray& a);
// A new numpy array of `dims` (BART's order; trailing singletons dropped) holding `values`.
py::array_t<std::complex<float>> from_bart(const std::vector<long>& dims, const std::vector<cfloat>& values);
// An empty numpy array of `dims` (Fortran order) to be filled.
py::array_t<std::complex<float>> new_bart_array(std::vector<long> dims);

}  // namespace radstream::python
