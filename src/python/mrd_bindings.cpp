// radstream.read_mrd and radstream.write_mrd: MRD files (HDF5 or stream, told by their first bytes) as BART's
// arrays and back, through the functions `radstream convert` uses (io/bart_mrd.hpp): d = read_mrd(f), then
// recon(d["traj"], d["kspace"], matrix=d["matrix"]) reconstructs what `radstream recon --input f` does.
#include <pybind11/stl.h>

#include "io/bart_mrd.hpp"
#include "io/frame_io.hpp"
#include "io/output_path.hpp"
#include "python/arrays.hpp"
#include "python/bindings.hpp"

namespace radstream::python {
namespace {

py::dict read_mrd(const std::string& path, long start, long count) {
  MrdAsBart r;
  {
    py::gil_scoped_release free;
    r = read_mrd_as_bart(path, start, count);
  }
  py::dict d;
  d["traj"] = from_bart(r.traj.dims, r.traj.data);
  d["kspace"] = from_bart(r.kspace.dims, r.kspace.data);
  d["matrix"] = r.header.matrix;
  py::dict h;
  h["matrix"] = r.header.matrix;
  h["samples"] = r.header.samples;
  h["coils"] = r.header.coils;
  h["readout_os"] = r.header.readout_os;
  h["fov_mm"] = r.header.fov_mm;
  h["spoke_rate_hz"] = r.header.spoke_rate_hz;
  d["header"] = h;
  return d;
}

std::size_t write_mrd(const std::string& path, const py::handle& traj, const py::handle& kspace, int matrix,
                      double rate, double fov, int repeat, bool overwrite) {
  check_output_file(path, "path", overwrite);
  const Frame f = frame_from_bart(to_cfl(as_bart_array(traj, "traj")),
                                  to_cfl(as_bart_array(kspace, "kspace")), matrix, "traj + kspace");
  py::gil_scoped_release free;
  return write_frame_as_mrd(path, f, BartToMrd{rate, fov, repeat});
}

}  // namespace

void bind_mrd(py::module_& m) {
  m.def("read_mrd", &read_mrd,
        "An MRD file's spokes as BART's arrays: {'traj': (3, samples, spokes) in BART units, 'kspace': (1, "
        "samples, spokes, coils), 'matrix': N, 'header': {...}}; start/count choose a range of spokes.",
        py::arg("path"), py::arg("start") = 0, py::arg("count") = -1);
  m.def("write_mrd", &write_mrd,
        "BART's radial arrays as an MRD file (.h5: HDF5, .mrd: a stream file), one acquisition per spoke at "
        "`rate` spokes/s, as `radstream convert --traj --kspace`; returns the acquisitions written.",
        py::arg("path"), py::arg("traj"), py::arg("kspace"), py::arg("matrix"), py::arg("rate") = 100.0,
        py::arg("fov") = 256.0, py::arg("repeat") = 1, py::arg("overwrite") = false);
}

}  // namespace radstream::python
