// radstream nufft: the NUFFT plan as a command, shaped like `bart nufft` (same trajectory units and array
// layouts), so that scripts can use it and tests can hold it against BART.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/cfl.hpp"
#include "recon/bart_nufft.hpp"

namespace radstream::app {
namespace {

struct NufftArgs {
  std::string traj, in, out, dims;
  bool adjoint = false;
  int width = 6;
  double oversampling = 2.0;
  int lut_resolution = 4096;
  int threads = 0;
  BackendChoice backend = BackendChoice::Auto;

  template <class V>
  void visit(V& v) {
    v.field("traj", traj, "BART trajectory [3 samples spokes] in BART units (+-N/2)");
    v.field("adjoint", adjoint, "adjoint (k-space -> image) instead of forward (image -> k-space)");
    v.field("dims", dims, "image extents x:y[:z] (empty: the image's, or the trajectory's reach)");
    v.field("width", width, 2, 16, "Kaiser-Bessel width W in grid cells");
    v.field("oversampling", oversampling, 1.0, 4.0, "grid oversampling sigma");
    v.field("lut_resolution", lut_resolution, 16, 1 << 20, "kernel table entries per grid cell");
    v.field("threads", threads, 0, 1024, "CPU threads (0 = all)");
    v.choice("backend", backend, kBackendChoices,
             "where to run: auto (the GPU when one is usable; a non-square 2D image stays on the CPU), cpu, "
             "cuda");
    v.field("input", in, "input .cfl: image (forward) or k-space (adjoint)");
    v.field("output", out, "output .cfl");
  }
};

int run_nufft(const NufftArgs& a) {
  const CflArray t = read_cfl(a.traj);
  if (t.dim(0) != 3)
    throw InputError(
        fmt::format("{}: a trajectory has 3 coordinates in its first dimension, not {}", a.traj, t.dim(0)));
  const std::size_t points = t.data.size() / 3;
  const CflArray in = read_cfl(a.in);

  // The image extents: from --dims, else from the image (forward) or the trajectory's reach (adjoint).
  std::vector<int> m;
  if (!a.dims.empty()) {
    m = parse_nufft_dims(a.dims, "--dims");
  } else if (!a.adjoint) {
    m = {int(in.dim(0)), int(in.dim(1))};
    if (in.dim(2) > 1) m.push_back(int(in.dim(2)));
  } else {
    m = nufft_dims_of_reach(t.data);
    log::info("--dims not given: {} from the trajectory's reach", fmt::join(m, ":"));
  }
  const BartNufftOptions options{a.width, a.oversampling, a.lut_resolution, a.threads, a.backend};
  BartNufftPlan plan(t.data, m, options, a.traj);
  const std::vector<int>& d = plan.dims();
  const long mz = d.size() > 2 ? d[2] : 1;
  const std::size_t image_size = plan.image_size();

  int batch = 1;
  std::vector<long> out_dims;
  if (a.adjoint) {
    if (in.dim(0) != 1 || std::size_t(in.dim(1) * in.dim(2)) != points)
      throw InputError(
          fmt::format("{}: k-space must be [1 {} {} ...] to match the trajectory", a.in, t.dim(1), t.dim(2)));
    batch = int(in.data.size() / points);
    out_dims = {d[0], d[1], mz};
  } else {
    if (in.dim(0) != d[0] || in.dim(1) != d[1] || in.dim(2) != mz)
      throw InputError(fmt::format("{}: image is [{} {} {}], --dims says {}:{}:{}", a.in, in.dim(0),
                                   in.dim(1), in.dim(2), d[0], d[1], mz));
    batch = int(in.data.size() / image_size);
    out_dims = {1, t.dim(1), t.dim(2)};
  }
  for (std::size_t k = 3; k < in.dims.size(); ++k) out_dims.push_back(in.dims[k]);
  log::info("nufft: {} ({})", to_string(plan.backend()), plan.backend_reason());

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<cfloat> out(a.adjoint ? image_size * std::size_t(batch) : points * std::size_t(batch));
  if (a.adjoint)
    plan.adjoint(in.data.data(), out.data(), batch);
  else
    plan.forward(in.data.data(), out.data(), batch);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_cfl(a.out, out_dims, out);
  log::info("nufft {} on {}: {} points, image {}, batch {}, {:.1f} ms; wrote {}",
            a.adjoint ? "adjoint" : "forward", to_string(plan.backend()), points, fmt::join(d, "x"), batch,
            ms, a.out);
  return 0;
}

}  // namespace

Runner add_nufft(CLI::App& app) {
  app.footer(
      "Forward: OUT[j] = s * sum_p IN(p) exp(-2 pi i k_j . p); adjoint (-a): OUT(p) = s * sum_j IN[j] "
      "exp(+2 pi i k_j . p), p = pixel - N/2 per axis, k_j = trajectory / N (BART units, +-N/2). s = "
      "1/sqrt(prod N), "
      "BART's scaling, so the result matches `bart nufft` to the kernel's accuracy. Layouts as BART: "
      "trajectory "
      "[3 samples spokes], k-space [1 samples spokes coils...], image [X Y Z coils...]. On the GPU when one "
      "is usable (2D square images and 3D), else the CPU (--backend); Kaiser-Bessel "
      "W 6, sigma 2 by default (relative error ~1e-5 against the exact sums).");
  DeclaredOptions::Style style;
  style.names = {{"traj", "--traj,-t"},
                 {"adjoint", "--adjoint,-a"},
                 {"dims", "--dims,-d"},
                 {"input", "input"},
                 {"output", "output"}};
  style.required = {"traj", "input", "output"};
  return declared_command(app, "nufft", NufftArgs{}, style, [](const NufftArgs& a) { return run_nufft(a); });
}

}  // namespace radstream::app
