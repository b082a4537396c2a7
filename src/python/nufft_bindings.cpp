// radstream.nufft and radstream.NufftPlan: the NUFFT of `radstream nufft` (recon/bart_nufft.hpp) on numpy
// arrays in BART's layouts: trajectory (3, samples, spokes, ...) in BART units, k-space (1, samples,
// spokes, extra...), image (X, Y[, Z][, extra...]). The GIL is released while a transform runs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>
#include <optional>

#include <pybind11/stl.h>
#include "core/error.hpp"

#include "python/arrays.hpp"
#include "python/bindings.hpp"
#include "python/dlpack_arrays.hpp"
#include "recon/bart_nufft.hpp"

namespace radstream::python {
namespace {

long product(const std::vector<long>& d, std::size_t from) {
  long n = 1;
  for (std::size_t i = from; i < d.size(); ++i) n *= d[i];
  return n;
}

class PyNufftPlan {
 public:
  PyNufftPlan(const py::handle& traj, std::optional<std::vector<int>> dims, int width, double oversampling,
              const std::string& backend) {
    const CArray a = as_bart_array(traj, "traj");  // (the plan keeps its own points; the array is not held)
    tdims_ = bart_dims(a);
    if (tdims_[0] != 3)
      throw ConfigError(
          fmt::format("traj: a trajectory has 3 coordinates in its first dimension, not {} "
                      "(shape {})",
                      tdims_[0], fmt::join(tdims_, ", ")));
    const std::span<const cfloat> t(reinterpret_cast<const cfloat*>(a.data()), std::size_t(a.size()));
    BartNufftOptions o;
    o.width = width;
    o.oversampling = oversampling;
    o.backend = kBackendChoices.parse(backend);
    plan_ = std::make_unique<BartNufftPlan>(t, dims ? *dims : nufft_dims_of_reach(t), o, "traj");
  }

  py::array forward(const py::handle& image) {
    const CArray x = as_bart_array(image, "image");
    std::vector<long> d = bart_dims(x);
    d.resize(std::max<std::size_t>(d.size(), 3), 1);
    const auto& m = plan_->dims();
    const long mz = m.size() > 2 ? m[2] : 1;
    if (d[0] != m[0] || d[1] != m[1] || d[2] != mz)
      throw ConfigError(fmt::format("image: shape ({}) does not begin with the plan's dims ({}, {}, {})",
                                    fmt::join(bart_dims(x), ", "), m[0], m[1], mz));
    const int batch = int(product(d, 3));
    std::vector<long> out_dims{1, tdims_.size() > 1 ? tdims_[1] : 1, tdims_.size() > 2 ? tdims_[2] : 1};
    for (std::size_t i = 3; i < d.size(); ++i) out_dims.push_back(d[i]);
    auto out = new_bart_array(out_dims);
    cfloat* y = reinterpret_cast<cfloat*>(out.mutable_data());
    {
      py::gil_scoped_release free;
      plan_->forward(reinterpret_cast<const cfloat*>(x.data()), y, batch);
    }
    return out;
  }

  py::array adjoint(const py::handle& kspace) {
    const CArray k = as_bart_array(kspace, "kspace");
    std::vector<long> d = bart_dims(k);
    d.resize(std::max<std::size_t>(d.size(), 3), 1);
    if (d[0] != 1 || std::size_t(d[1] * d[2]) != plan_->points())
      throw ConfigError(fmt::format("kspace: shape ({}) must be (1, {}, {}, ...) to match the trajectory",
                                    fmt::join(bart_dims(k), ", "), tdims_.size() > 1 ? tdims_[1] : 1,
                                    tdims_.size() > 2 ? tdims_[2] : 1));
    const int batch = int(product(d, 3));
    const auto& m = plan_->dims();
    std::vector<long> out_dims{m[0], m[1], m.size() > 2 ? m[2] : 1};
    for (std::size_t i = 3; i < d.size(); ++i) out_dims.push_back(d[i]);
    auto out = new_bart_array(out_dims);
    cfloat* x = reinterpret_cast<cfloat*>(out.mutable_data());
    {
      py::gil_scoped_release free;
      plan_->adjoint(reinterpret_cast<const cfloat*>(k.data()), x, batch);
    }
    return out;
  }

  py::array normal(const py::handle& image) { return adjoint(forward(image)); }

  // Device tensors through DLPack (the Python layer's torch path): no host copy, ordered on `stream` (the
  // caller's cudaStream_t as an integer). The sizes say the batch.
  void apply_dlpack(bool forward, const py::capsule& in, const py::capsule& out, std::uintptr_t stream) {
    const DlpackArray x(in, forward ? "image" : "kspace"), y(out, "out");
    const std::int64_t n_in = forward ? std::int64_t(plan_->image_size()) : std::int64_t(plan_->points());
    const std::int64_t n_out = forward ? std::int64_t(plan_->points()) : std::int64_t(plan_->image_size());
    if (x.size() % n_in != 0 || x.size() == 0)
      throw ConfigError(fmt::format("{}: {} values are not a whole number of {} ({} each)",
                                    forward ? "image" : "kspace", x.size(),
                                    forward ? "images" : "k-space sets", n_in));
    const std::int64_t batch = x.size() / n_in;
    if (y.size() != batch * n_out)
      throw ConfigError(fmt::format("out: {} values, {} wanted", y.size(), batch * n_out));
    // The engine is made at its first use on the current device (the Python layer makes that the tensors');
    // once made, the tensors must be where it is.
    const int on = plan_->device();
    if (x.device() != y.device() || (on >= 0 && x.device() != on))
      throw ConfigError(fmt::format("the tensors are on CUDA devices {} and {}, the plan on {}", x.device(),
                                    y.device(), on));
    py::gil_scoped_release free;
    const auto s = reinterpret_cast<gpu::StreamRef>(stream);
    if (forward)
      plan_->forward_device(x.data(), y.data(), int(batch), s);
    else
      plan_->adjoint_device(x.data(), y.data(), int(batch), s);
  }
  std::vector<long> kspace_dims() const { return {tdims_.begin() + 1, tdims_.end()}; }
  std::vector<int> dims() const { return plan_->dims(); }
  std::string backend() const { return to_string(plan_->backend()); }

 private:
  std::vector<long> tdims_;
  std::unique_ptr<BartNufftPlan> plan_;
};

}  // namespace

void bind_nufft(py::module_& m) {
  py::class_<PyNufftPlan>(
      m, "NufftPlan",
      "A NUFFT plan for one trajectory (BART's layout and units), applied many times.\n"
      "forward(image) -> kspace, adjoint(kspace) -> image, normal(image) = "
      "adjoint(forward(image)); both directions scaled by 1/sqrt(prod dims) as bart nufft.")
      .def(py::init<const py::handle&, std::optional<std::vector<int>>, int, double, const std::string&>(),
           py::arg("traj"), py::arg("dims") = py::none(), py::arg("width") = 6, py::arg("oversampling") = 2.0,
           py::arg("backend") = "auto")
      .def("forward", &PyNufftPlan::forward, py::arg("image"))
      .def("adjoint", &PyNufftPlan::adjoint, py::arg("kspace"))
      .def("normal", &PyNufftPlan::normal, py::arg("image"))
      .def("_apply_dlpack", &PyNufftPlan::apply_dlpack, py::arg("forward"), py::arg("data"), py::arg("out"),
           py::arg("stream"))
      .def_property_readonly("kspace_dims", &PyNufftPlan::kspace_dims)
      .def_property_readonly("dims", &PyNufftPlan::dims)
      .def_property_readonly("backend", &PyNufftPlan::backend);

  m.def(
      "nufft",
      [](const py::handle& traj, const py::handle& data, bool adjoint, std::optional<std::vector<int>> dims,
         int width, double oversampling, const std::string& backend) {
        if (!adjoint && !dims) {  // forward: the image's extents
          const std::vector<long> d = bart_dims(as_bart_array(data, "data"));
          dims = std::vector<int>{int(d[0]), d.size() > 1 ? int(d[1]) : 1};
          if (d.size() > 2 && d[2] > 1) dims->push_back(int(d[2]));
        }
        PyNufftPlan plan(traj, dims, width, oversampling, backend);
        return adjoint ? plan.adjoint(data) : plan.forward(data);
      },
      "The NUFFT as `bart nufft` computes it: forward (image -> k-space) or adjoint (k-space -> image).\n"
      "dims: the image extents (X, Y[, Z]); None: the image's (forward) or the trajectory's reach (adjoint).",
      py::arg("traj"), py::arg("data"), py::arg("adjoint") = false, py::arg("dims") = py::none(),
      py::arg("width") = 6, py::arg("oversampling") = 2.0, py::arg("backend") = "auto");
}

}  // namespace radstream::python
