// radstream nufft: the NUFFT plan as a command, shaped like `bart nufft` (same trajectory units and array
// layouts), so that scripts can use it and tests can hold it against BART.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "io/cfl.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "recon/backend.hpp"
#if RADSTREAM_HAVE_CUDA
#include "noncart/nufft_operator_cuda.hpp"
#endif

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

// "N:N" or "N:N:N" (x:y[:z]).
std::vector<int> parse_dims(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ':')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(part, &used);
      if (used != part.size()) throw std::invalid_argument(part);
      out.push_back(v);
    } catch (const std::exception&) {
      throw ConfigError("--dims '" + s + "': '" + part + "' is not a whole number");
    }
  }
  if (out.size() < 2 || out.size() > 3)
    throw ConfigError("--dims '" + s + "' must be N:N (2D) or N:N:N (3D)");
  for (int v : out)
    if (v < 2 || v % 2 || v > 4096)
      throw ConfigError(fmt::format("--dims '{}': extent {} must be even and in 2..4096", s, v));
  if (out.size() == 3 && out[2] == 1) out.pop_back();
  return out;
}

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
    m = parse_dims(a.dims);
  } else if (!a.adjoint) {
    m = {int(in.dim(0)), int(in.dim(1))};
    if (in.dim(2) > 1) m.push_back(int(in.dim(2)));
  } else {
    double reach[3] = {0, 0, 0};
    for (std::size_t j = 0; j < points; ++j)
      for (int ax = 0; ax < 3; ++ax)
        reach[ax] = std::max(reach[ax], double(std::abs(t.data[3 * j + ax].real())));
    for (int ax = 0; ax < 3; ++ax) {
      const int n = 2 * int(std::ceil(reach[ax] - 1e-3));
      if (ax < 2 || n > 0) m.push_back(std::max(n, 2));
    }
    log::info("--dims not given: {} from the trajectory's reach", fmt::join(m, ":"));
  }
  const int dims = int(m.size());
  std::array<int, 3> matrix{m[0], m[1], dims > 2 ? m[2] : 1};
  const std::size_t image_size = std::size_t(matrix[0]) * matrix[1] * matrix[2];

  // Trajectory: BART units (+-N/2 per axis) -> cycles per pixel.
  std::vector<float> k(points * dims);
  for (std::size_t j = 0; j < points; ++j)
    for (int ax = 0; ax < dims; ++ax) {
      const float v = t.data[3 * j + ax].real();
      if (!std::isfinite(v) || std::abs(v) > 1e6f)
        throw InputError(fmt::format("{}: point {} has coordinate {} on axis {} (must be finite, |k| <= 1e6)",
                                     a.traj, j, v, ax));
      k[std::size_t(dims) * j + ax] = v / float(matrix[ax]);
    }

  int batch = 1;
  std::vector<long> out_dims;
  if (a.adjoint) {
    if (in.dim(0) != 1 || std::size_t(in.dim(1) * in.dim(2)) != points)
      throw InputError(
          fmt::format("{}: k-space must be [1 {} {} ...] to match the trajectory", a.in, t.dim(1), t.dim(2)));
    batch = int(in.data.size() / points);
    out_dims = {matrix[0], matrix[1], matrix[2]};
    for (std::size_t d = 3; d < in.dims.size(); ++d) out_dims.push_back(in.dims[d]);
  } else {
    if (in.dim(0) != matrix[0] || in.dim(1) != matrix[1] || in.dim(2) != matrix[2])
      throw InputError(fmt::format("{}: image is [{} {} {}], --dims says {}:{}:{}", a.in, in.dim(0),
                                   in.dim(1), in.dim(2), matrix[0], matrix[1], matrix[2]));
    batch = int(in.data.size() / image_size);
    out_dims = {1, t.dim(1), t.dim(2)};
    for (std::size_t d = 3; d < in.dims.size(); ++d) out_dims.push_back(in.dims[d]);
  }

  // The backend: the 2D GPU operator takes square images only; auto keeps the others on the CPU.
  BackendDecision where = resolve_backend(a.backend);
  if (where.backend == Backend::Cuda && dims == 2 && matrix[0] != matrix[1]) {
    if (a.backend == BackendChoice::Cuda)
      throw ConfigError(fmt::format("--backend cuda: the 2D GPU NUFFT takes a square image, not {}x{}",
                                    matrix[0], matrix[1]));
    where = {Backend::Cpu, fmt::format("the 2D GPU NUFFT takes square images; {}x{} runs on the CPU",
                                       matrix[0], matrix[1])};
  }
  log::info("nufft: {} ({})", to_string(where.backend), where.reason);

  const auto t0 = std::chrono::steady_clock::now();
  const NufftKernel kernel{a.width, a.oversampling, a.lut_resolution};
  std::vector<cfloat> out(a.adjoint ? image_size * batch : points * batch);
  if (where.backend == Backend::Cuda) {
#if RADSTREAM_HAVE_CUDA
    gpu::Stream stream;
    DeviceBuffer<float> d_k(Extents{k.size()});
    DeviceBuffer<cfloat> d_in(Extents{in.data.size()}), d_out(Extents{out.size()});
    gpu::copy_to_device(d_k.data(), k.data(), k.size() * sizeof(float), stream.get());
    gpu::copy_to_device(d_in.data(), in.data.data(), in.data.size() * sizeof(cfloat), stream.get());
    NufftOperatorCuda op(dims, matrix, batch, points, kernel, stream.get());
    op.set_points(d_k.data());
    if (a.adjoint)
      op.adjoint(d_in.data(), d_out.data());
    else
      op.forward(d_in.data(), d_out.data());
    gpu::copy_to_host(out.data(), d_out.data(), out.size() * sizeof(cfloat), stream.get());
    gpu::synchronize(stream.get());
#endif
  } else {
    NufftOperatorCpu op(dims, matrix, batch, points, kernel, FftPlanner::Estimate, a.threads);
    op.set_points(k.data());
    if (a.adjoint)
      op.adjoint(in.data.data(), out.data());
    else
      op.forward(in.data.data(), out.data());
  }
  // The operator is unscaled (the exact NUDFT sums); BART scales both directions by 1/sqrt(prod N).
  const float scale = 1.f / std::sqrt(float(image_size));
  for (auto& v : out) v *= scale;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  write_cfl(a.out, out_dims, out);
  log::info("nufft {} on {}: {} points, image {}, batch {}, {:.1f} ms; wrote {}",
            a.adjoint ? "adjoint" : "forward", to_string(where.backend), points, fmt::join(m, "x"), batch, ms,
            a.out);
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
