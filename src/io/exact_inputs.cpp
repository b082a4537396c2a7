#include "io/exact_inputs.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/impatient.hpp"
#include "io/png_writer.hpp"

namespace radstream {

namespace {

// One coordinate array of the voxels: how many distinct values, the stride (in voxels) between them, the
// first value and the spacing.
struct Axis {
  const std::vector<float>* r = nullptr;
  std::size_t n = 1, stride = 0;
  double first = 0, step = 0;
};

Axis find_axis(const std::vector<float>& r, const char* name, const std::string& dir) {
  Axis a;
  a.r = &r;
  if (r.empty()) return a;
  a.first = r[0];
  for (std::size_t v = 1; v < r.size(); ++v)
    if (r[v] != r[0]) {
      a.stride = v;
      break;
    }
  if (a.stride == 0) return a;  // constant: an axis of one voxel
  a.step = double(r[a.stride]) - double(r[0]);
  a.n = std::size_t(std::llround(1.0 / std::abs(a.step)));
  if (a.n < 2 || std::abs(a.step * double(a.n) - (a.step > 0 ? 1 : -1)) > 1e-3)
    throw InputError(
        fmt::format("IMPATIENT {}: {} steps by {} of the field of view, not 1/n", dir, name, a.step));
  for (std::size_t v = 0; v < r.size(); ++v) {
    const double want = a.first + a.step * double((v / a.stride) % a.n);
    if (std::abs(double(r[v]) - want) > 1e-4)
      throw InputError(fmt::format("IMPATIENT {}: {}[{}] = {} is off the regular grid (expected {})", dir,
                                   name, v, r[v], want));
  }
  return a;
}

std::vector<cfloat> complex_of(const std::vector<float>& re, const std::vector<float>& im) {
  std::vector<cfloat> c(re.size());
  for (std::size_t i = 0; i < re.size(); ++i) c[i] = {re[i], im[i]};
  return c;
}

}  // namespace

ExactInputs load_impatient(const std::string& dir) {
  const ImpatientCase c = read_impatient_case(dir);
  // The three coordinates, slowest first (largest stride; a constant one is an axis of one voxel, put first).
  std::vector<std::pair<Axis, int>> axes = {
      {find_axis(c.ix, "ix", dir), 0}, {find_axis(c.iy, "iy", dir), 1}, {find_axis(c.iz, "iz", dir), 2}};
  std::stable_sort(axes.begin(), axes.end(), [](const auto& a, const auto& b) {
    const auto key = [](const Axis& x) { return x.stride == 0 ? SIZE_MAX : x.stride; };
    return key(a.first) > key(b.first);
  });
  ExactInputs in;
  in.source = dir;
  ExactModel& m = in.model;
  std::size_t V = 1;
  const std::vector<float>* k_of[3] = {&c.kx, &c.ky, &c.kz};
  const std::vector<float>* g_of[3] = {&c.gx, &c.gy, &c.gz};
  for (int a = 0; a < 3; ++a) {
    const Axis& ax = axes[a].first;
    const int coord = axes[a].second;
    m.grid.n[a] = int(ax.n);
    V *= ax.n;
    // Positions and k in pixels: r * n and k / n (an axis of one voxel keeps its units: n = 1).
    m.grid.origin[a] = ax.first * double(ax.n);
    const auto& k = *k_of[coord];
    if (!k.empty()) {
      m.k[a].resize(k.size());
      for (std::size_t i = 0; i < k.size(); ++i) m.k[a][i] = float(double(k[i]) / double(ax.n));
    }
    m.g[a] = *g_of[coord];
  }
  if (V != c.voxels)
    throw InputError(
        fmt::format("IMPATIENT {}: the coordinates make a {} x {} x {} grid, not the {} voxels there are",
                    dir, m.grid.n[0], m.grid.n[1], m.grid.n[2], c.voxels));
  // The stride of each axis must be the product of the faster ones (voxels stored in grid order).
  if (axes[2].first.n > 1 && axes[2].first.stride != 1)
    throw InputError(fmt::format("IMPATIENT {}: no coordinate varies fastest in memory", dir));
  const bool any_gradient = std::any_of(c.gx.begin(), c.gx.end(), [](float v) { return v != 0; }) ||
                            std::any_of(c.gy.begin(), c.gy.end(), [](float v) { return v != 0; }) ||
                            std::any_of(c.gz.begin(), c.gz.end(), [](float v) { return v != 0; });
  if (!any_gradient) m.g = {};
  if (std::any_of(c.fm.begin(), c.fm.end(), [](float v) { return v != 0; })) m.fm = c.fm;
  if (m.has_field()) m.t = c.t;
  in.kdata = complex_of(c.kdata_r, c.kdata_i);
  in.coils = c.coils;
  in.mask = c.mask;
  m.validate();
  return in;
}

namespace {

std::vector<float> real_part(const CflArray& a) {
  std::vector<float> r(a.data.size());
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = a.data[i].real();
  return r;
}

}  // namespace

ExactInputs load_cfl_exact(const CflExactArgs& a) {
  if (a.matrix < 0) throw ConfigError("--matrix N is required with --traj/--kspace");
  if (a.matrix < 2) throw ConfigError(fmt::format("--matrix {} must be >= 2", a.matrix));
  if (a.dims != 2 && a.dims != 3) throw ConfigError(fmt::format("--dims {} must be 2 or 3", a.dims));
  const CflArray t = read_cfl(a.traj), k = read_cfl(a.kspace);
  if (t.dim(0) != 3) throw InputError(fmt::format("{}: trajectory dim 0 is {}, not 3", a.traj, t.dim(0)));
  const std::size_t M = std::size_t(t.dim(1)) * std::size_t(t.dim(2));
  if (std::size_t(k.dim(0)) * k.dim(1) * k.dim(2) != M)
    throw InputError(
        fmt::format("{}: {} x {} samples per coil, the trajectory has {}", a.kspace, k.dim(1), k.dim(2), M));
  ExactInputs in;
  in.source = a.traj + " + " + a.kspace;
  in.coils = int(k.dim(3));
  in.slices = int(k.dim(4));
  if (std::size_t(in.coils) * std::size_t(in.slices) * M != k.data.size())
    throw InputError(
        fmt::format("{}: only dims 0-4 may be larger than 1 ([1 readout spokes coils slices])", a.kspace));
  if (in.slices > 1 && a.dims == 3) throw ConfigError("--dims 3 takes one volume, not slices");
  if (in.slices > 1 && (!a.fieldmap.empty() || !a.gradients.empty()))
    throw ConfigError("a field map or gradients apply to one slice; give the slices one run each");
  in.kdata = k.data;
  ExactModel& m = in.model;
  m.grid = ExactGrid::image(a.matrix, a.dims);
  // BART's coordinate 0 is x (the fastest image axis, our axis 2), 1 is y, 2 is z.
  for (int c = 0; c < a.dims; ++c) {
    auto& dst = m.k[2 - c];
    dst.resize(M);
    for (std::size_t i = 0; i < M; ++i) dst[i] = t.data[3 * i + c].real() / float(a.matrix);
  }
  const std::size_t V = m.voxels();
  if (!a.fieldmap.empty()) {
    const CflArray f = read_cfl(a.fieldmap);
    if (f.data.size() != V)
      throw InputError(fmt::format("{}: {} values, the image has {}", a.fieldmap, f.data.size(), V));
    m.fm = real_part(f);
  }
  if (!a.gradients.empty()) {
    const CflArray g = read_cfl(a.gradients);
    if (g.data.size() != 3 * V)
      throw InputError(fmt::format("{}: {} values, 3 x {} expected ([N N (N) 3]: x, y, z)", a.gradients,
                                   g.data.size(), V));
    for (int c = 0; c < 3; ++c) {
      auto& dst = m.g[2 - c];
      dst.resize(V);
      for (std::size_t v = 0; v < V; ++v) dst[v] = g.data[std::size_t(c) * V + v].real();
    }
    if (a.dims == 2) m.g[0].assign(V, 0.0f);
  }
  if (!a.times.empty()) {
    const CflArray tt = read_cfl(a.times);
    if (tt.data.size() != M)
      throw InputError(fmt::format("{}: {} times, {} samples", a.times, tt.data.size(), M));
    m.t = real_part(tt);
  } else if (m.has_field()) {
    throw ConfigError("--fieldmap and --gradients need --times T.cfl (the time of every sample)");
  }
  m.validate();
  return in;
}

void write_exact_image(const std::string& path, const std::vector<cfloat>& image, const ExactGrid& grid) {
  auto ends = [&](const char* e) { return path.size() >= std::string(e).size() && path.ends_with(e); };
  const int nx = grid.n[2], ny = grid.n[1], nz = grid.n[0];
  if (ends(".cfl")) {
    std::vector<long> dims = {nx, ny};
    if (nz > 1) dims.push_back(nz);
    write_cfl(path, dims, image);
  } else if (ends(".png")) {
    // Slices side by side, cols = ceil(sqrt(nz)).
    const int cols = int(std::ceil(std::sqrt(double(nz)))), rows = (nz + cols - 1) / cols;
    const int W = cols * nx, H = rows * ny;
    std::vector<float> pixels(std::size_t(W) * H, 0.0f);
    const auto mag = magnitude(image);
    for (int z = 0; z < nz; ++z)
      for (int y = 0; y < ny; ++y)
        for (int x = 0; x < nx; ++x)
          pixels[std::size_t((z / cols) * ny + y) * W + (z % cols) * nx + x] =
              mag[(std::size_t(z) * ny + y) * nx + x];
    std::vector<float> sorted = mag;
    std::sort(sorted.begin(), sorted.end());
    const float lo = sorted[std::size_t(0.005 * double(sorted.size() - 1))];
    const float hi = sorted[std::size_t(0.995 * double(sorted.size() - 1))];
    write_png_grey(path, pixels, W, H, lo, hi > lo ? hi : lo + 1.0f);
  } else {
    throw ConfigError(fmt::format("output '{}' must end in .cfl or .png", path));
  }
}

ExactModel exact_model_3d(const std::vector<std::array<float, 3>>& k_xyz, int n) {
  ExactModel m;
  m.grid = ExactGrid::image(n, 3);
  for (int a = 0; a < 3; ++a) m.k[a].resize(k_xyz.size());
  for (std::size_t i = 0; i < k_xyz.size(); ++i) {
    m.k[2][i] = k_xyz[i][0];
    m.k[1][i] = k_xyz[i][1];
    m.k[0][i] = k_xyz[i][2];
  }
  return m;
}

}  // namespace radstream
