// radstream.recon: the reconstruction of `radstream recon --traj T --kspace K` on numpy arrays in BART's
// layouts (trajectory (3, samples, spokes[, ..., turns]), k-space (1, samples, spokes, coils[, ...,
// frames])), through the same functions as the command (recon/offline_recon.hpp, recon/nlinv_job.hpp), so
// that the result is the command's. Every `recon.` key is a keyword (`lambda_` for `lambda`), read and
// range-checked by the same reader as the YAML files; a bad key or value is a radstream.ConfigError naming
// it.
#include <fmt/format.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "core/error.hpp"
#include "io/frame_io.hpp"
#include "python/arrays.hpp"
#include "python/bindings.hpp"
#include "recon/methods.hpp"
#include "recon/nlinv_job.hpp"
#include "recon/offline_recon.hpp"
#include "recon/offline_volume.hpp"
#include "recon/recon_params.hpp"
#include "recon/rotated_stack.hpp"
#include "recon/stack_of_stars.hpp"

namespace radstream::python {
namespace {

// A keyword's value as the YAML reader takes it (True -> true; numbers and strings as written).
std::string yaml_scalar(const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return v.cast<bool>() ? "true" : "false";
  return std::string(py::str(v));
}

ReconParams params_of(const std::string& method, const py::kwargs& keys) {
  YAML::Node node;
  node["method"] = method;
  for (const auto& [k, v] : keys) {
    std::string key = std::string(py::str(k));
    if (key == "lambda_") key = "lambda";  // `lambda` is a Python keyword
    node[key] = yaml_scalar(v);
  }
  ReconParams p = ReconParams::from_config(node);
  p.validate(false);
  // A one-off reconstruction plans its FFTs with FFTW's estimate planner, as the command does.
  if (!keys.contains("fftw_planner")) p.fft.planner = FftPlanner::Estimate;
  return p;
}

// Coil maps given as an array: written where the chain reads a --sens file (a temporary CFL pair).
class SensFile {
 public:
  explicit SensFile(const py::handle& sens) {
    const CflArray s = to_cfl(as_bart_array(sens, "sens"));
    char tmpl[] = "/tmp/radstream-sens-XXXXXX";
    if (!::mkdtemp(tmpl)) throw IoError("sens: cannot make a temporary folder for the coil maps");
    dir_ = tmpl;
    path_ = dir_ + "/sens";
    write_cfl(path_, s.dims, s.data);
  }
  ~SensFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
};

py::array recon(const py::handle& traj, const py::handle& kspace, int matrix, const std::string& method,
                const py::handle& sens, const std::string& gradient_delay, int partitions,
                const py::kwargs& keys) {
  ReconParams p = params_of(method, keys);
  const CflArray t = to_cfl(as_bart_array(traj, "traj"));
  const CflArray k = to_cfl(as_bart_array(kspace, "kspace"));
  std::optional<SensFile> sens_file;
  if (!sens.is_none()) {
    if (p.method != ReconMethod::CgSense)
      throw ConfigError("sens: coil maps go with method='cg-sense', not '" + method + "'");
    sens_file.emplace(sens);
    p.cg.sens = sens_file->path();
  }
  if (const auto stack = stack_of_stars_layout(t, partitions, "traj")) {  // a volume [N N P]
    if (matrix <= 0) throw ConfigError(fmt::format("matrix {}: give the image matrix N (>= 1)", matrix));
    if (gradient_delay != "off") throw ConfigError("gradient_delay: not with a stack of stars");
    if (stack->rotated && p.method == ReconMethod::Gridding) {  // through the 3D NUFFT
      std::vector<cfloat> image;
      {
        py::gil_scoped_release free;
        image = rotated_stack_gridding(*stack, t, k, matrix, p, "traj + kspace");
      }
      return from_bart({matrix, matrix, stack->partitions}, image);
    }
    if (stack->rotated && p.method == ReconMethod::CgSense && sens_file) {  // the 3D SENSE operator
      const long coils = long(k.data.size()) / std::max(1L, long(stack->samples) * t.dim(2));
      const auto maps = read_volume_maps(p.cg.sens, matrix, stack->partitions, int(coils));
      std::vector<cfloat> image;
      {
        py::gil_scoped_release free;
        image = rotated_stack_cg_sense(*stack, t, k, matrix, maps, p, "traj + kspace");
      }
      return from_bart({matrix, matrix, stack->partitions}, image);
    }
    const std::vector<Frame> frames = stack_frames(*stack, t, k, matrix, "traj + kspace");
    OfflineVolume v;
    {
      py::gil_scoped_release free;
      v = reconstruct_volume(frames, p, p.cg.sens, false);
    }
    return from_bart({matrix, matrix, v.partitions}, v.image);
  }
  if (builtin_methods().at(p.method).route == OfflineRoute::Nlinv) {
    if (gradient_delay != "off") throw ConfigError("gradient_delay: not with method='nlinv'");
    NlinvImages r;
    {
      py::gil_scoped_release free;
      r = reconstruct_nlinv(NlinvJob{"traj", "kspace", "", "", matrix > 0 ? matrix : -1}, t, k, p);
    }
    return from_bart(r.dims, r.images);
  }
  if (matrix <= 0) throw ConfigError(fmt::format("matrix {}: give the image matrix N (>= 1)", matrix));
  Frame frame = frame_from_bart(t, k, matrix, "traj + kspace");
  OfflineImage r;
  {
    py::gil_scoped_release free;
    r = reconstruct_offline(frame, p, gradient_delay);
  }
  return from_bart({matrix, matrix}, r.image);
}

}  // namespace

void bind_recon(py::module_& m) {
  m.def("recon", &recon,
        "The reconstruction of `radstream recon --traj T --kspace K --matrix N --method M`: the combined\n"
        "(N, N) complex image (nlinv: (N, N[, 1, ..., frames]) over the frames of dimension 10).\n"
        "method: gridding | fbp | cg-sense | nlinv; sens: coil maps (N, N, 1, coils) for cg-sense;\n"
        "gradient_delay: off | auto | A:B:C; every recon key as a keyword (lambda_ for lambda),\n"
        "e.g. iterations=10, kernel_width=6, backend='cpu'. A stack of stars (kz of traj on whole\n"
        "numbers) gives the volume (N, N, P); partitions: its depth P (-1: from the trajectory); sens\n"
        "then (N, N, P, coils) or (N, N, 1, coils).",
        py::arg("traj"), py::arg("kspace"), py::arg("matrix") = -1, py::arg("method") = "gridding",
        py::arg("sens") = py::none(), py::arg("gradient_delay") = "off", py::arg("partitions") = -1);
}

}  // namespace radstream::python
