// The compiled part of the Python package `radstream` (build/python/radstream/_core*.so, imported by its
// __init__.py; PYTHONPATH=build/python): the NUFFT, the offline reconstructions and their errors. radstream's
// errors arrive as Python exceptions: ConfigError and InputError are ValueErrors, IoError an OSError,
// NumericError an ArithmeticError, CudaError a RuntimeError; each names the bad argument or value. The
// library's log lines go to stderr at `warn` and above unless set_log_level says otherwise.
#include <pybind11/pybind11.h>

#include "core/error.hpp"
#include "core/log.hpp"
#include "python/bindings.hpp"
#include "version.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_core, m) {
  m.doc() = "radstream: real-time radial MRI reconstruction (NUFFT, gridding, FBP, CG-SENSE, NLINV)";
  radstream::log::install_default_logger();
  radstream::log::set_level("warn");
  m.attr("__version__") = RADSTREAM_VERSION;

  py::register_exception<radstream::ConfigError>(m, "ConfigError", PyExc_ValueError);
  py::register_exception<radstream::InputError>(m, "InputError", PyExc_ValueError);
  py::register_exception<radstream::IoError>(m, "IoError", PyExc_OSError);
  py::register_exception<radstream::NumericError>(m, "NumericError", PyExc_ArithmeticError);
  py::register_exception<radstream::CudaError>(m, "CudaError", PyExc_RuntimeError);
  m.def(
      "set_log_level", [](const std::string& level) { radstream::log::set_level(level); },
      "radstream's log lines on stderr from this level: trace|debug|info|warn|error|off", py::arg("level"));
  radstream::python::bind_nufft(m);
  radstream::python::bind_recon(m);
  radstream::python::bind_mrd(m);
  radstream::python::bind_stream(m);
  radstream::python::bind_mrd_stream(m);
}
