#include "io/frame_io.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "io/image_stats.hpp"
#include "io/png_writer.hpp"

namespace radstream {

HostBuffer<cfloat> read_coil_maps(const std::string& path, int matrix, int coils) {
  const CflArray a = read_cfl(path);
  bool extra = false;
  for (std::size_t i = 5; i < a.dims.size(); ++i) extra = extra || a.dims[i] != 1;
  if (a.dim(0) != matrix || a.dim(1) != matrix || a.dim(2) != 1 || a.dim(3) != coils || extra)
    throw IoError(fmt::format("{}: coil maps are [{}], expected [{} {} 1 {}] (N N 1 coils) for these data",
                              path, fmt::join(a.dims, " "), matrix, matrix, coils));
  HostBuffer<cfloat> maps(Extents{std::size_t(coils), std::size_t(matrix), std::size_t(matrix)});
  std::copy(a.data.begin(), a.data.begin() + long(maps.size()), maps.data());  // first set of maps
  for (std::size_t i = 0; i < maps.size(); ++i)
    if (!std::isfinite(maps[i].real()) || !std::isfinite(maps[i].imag()))
      throw IoError(fmt::format("{}: coil map value {} is not finite", path, i));
  return maps;
}

Frame frame_from_bart(const CflArray& traj, const CflArray& ksp, int matrix, const std::string& what) {
  bool extra_dims = false;
  for (std::size_t i = 3; i < traj.dims.size(); ++i) extra_dims = extra_dims || traj.dims[i] != 1;
  if (traj.dims.empty() || traj.dim(0) != 3 || extra_dims)
    throw IoError(fmt::format("{}: trajectory dimensions must be [3 samples spokes], not [{}]", what,
                              fmt::join(traj.dims, " ")));
  const long S = traj.dim(1), P = traj.dim(2);
  const auto kd = ksp.squeezed();
  long C = 1;
  if (kd.size() == 3 && kd[0] == S && kd[1] == P)
    C = kd[2];
  else if (!(kd.size() == 2 && kd[0] == S && kd[1] == P) && !(kd.size() == 1 && S * P == kd[0] && P == 1))
    throw IoError(
        fmt::format("{}: k-space dimensions [{}] do not match the trajectory's {} samples x {} spokes "
                    "(expected [1 {} {} coils])",
                    what, fmt::join(ksp.dims, " "), S, P, S, P));
  if (S < 2)
    throw IoError(fmt::format("{}: a spoke needs at least 2 samples, the trajectory has {}", what, S));
  Geometry g{matrix, int(S), int(P), int(C), 1.f};
  try {
    g.validate();
  } catch (const ConfigError& e) {
    throw IoError(fmt::format("{}: {}", what, e.what()));
  }
  Frame f(g);
  const double scale = 1.0 / matrix;  // BART units -> cycles/pixel
  double kmax = 0;
  for (long j = 0; j < S * P; ++j) {
    const double kx = traj.data[3 * j].real() * scale, ky = traj.data[3 * j + 1].real() * scale;
    if (!std::isfinite(kx) || !std::isfinite(ky))
      throw IoError(fmt::format("{}: trajectory sample {} is not finite", what, j));
    if (const float kz = traj.data[3 * j + 2].real(); kz != 0.f)  // never dropped silently
      throw ConfigError(fmt::format(
          "{}: trajectory sample {} has kz = {}: 3D data, read here as one 2D frame (radstream recon takes a "
          "stack of stars, kz on whole numbers, as a volume; radstream nufft any 3D trajectory)",
          what, j, kz));
    f.traj[2 * j] = float(kx);
    f.traj[2 * j + 1] = float(ky);
    kmax = std::max(kmax, std::max(std::abs(kx), std::abs(ky)));
  }
  if (kmax > 0.75)  // the data are readable; the option does not fit them: a configuration error (exit 2)
    throw ConfigError(
        fmt::format("{}: trajectory reaches |k| = {:.3f} cycles/pixel for matrix {}: is --matrix right? "
                    "(BART units are +-N/2 for an N x N image)",
                    what, kmax, matrix));
  // Same memory order: k-space [S][P][C] with S fastest == frame data [C][P][S].
  for (std::size_t i = 0; i < ksp.data.size(); ++i)
    if (!std::isfinite(ksp.data[i].real()) || !std::isfinite(ksp.data[i].imag()))
      throw IoError(fmt::format("{}: k-space value {} is NaN or Inf", what, i));
  std::copy(ksp.data.begin(), ksp.data.end(), f.data.data());
  for (long p = 0; p < P; ++p) f.spoke_index[p] = std::uint64_t(p);
  return f;
}

Frame frame_from_spokes(const StreamHeader& h, std::span<const Spoke> spokes) {
  if (spokes.empty()) throw InputError("no spokes to reconstruct");
  Frame f(h.geometry(int(spokes.size())));
  for (std::size_t i = 0; i < spokes.size(); ++i) f.set_spoke(int(i), spokes[i]);
  return f;
}

std::vector<float> magnitude(std::span<const cfloat> image) {
  std::vector<float> m(image.size());
  for (std::size_t i = 0; i < image.size(); ++i) m[i] = std::abs(image[i]);
  return m;
}

void check_image_output(const std::string& path) {
  const std::filesystem::path p(path);
  if (p.extension() != ".cfl" && p.extension() != ".png")
    throw ConfigError(fmt::format("output '{}' must end in .cfl or .png", path));
  if (p.has_parent_path() && !std::filesystem::is_directory(p.parent_path()))
    throw IoError(fmt::format("output '{}': the folder {} does not exist", path, p.parent_path().string()));
}

void write_image(const std::string& path, std::span<const cfloat> image, int matrix) {
  auto ends = [&](const char* ext) {
    const std::string e(ext);
    return path.size() >= e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (image.size() != std::size_t(matrix) * matrix)
    throw IoError(fmt::format("{}: image has {} pixels, not {}^2", path, image.size(), matrix));
  if (ends(".cfl")) {
    write_cfl(path, {matrix, matrix}, image);
  } else if (ends(".png")) {
    const auto m = magnitude(image);
    write_png_grey(path, m, matrix, matrix, percentile(m, 0.5), percentile(m, 99.5));
  } else {
    throw ConfigError(fmt::format("output '{}' must end in .cfl or .png", path));
  }
}

void write_volume(const std::string& path, std::span<const cfloat> volume, int matrix, int depth) {
  const std::size_t plane = std::size_t(matrix) * matrix;
  if (depth < 1 || volume.size() != plane * std::size_t(depth))
    throw IoError(
        fmt::format("{}: a volume of {} values is not {} x {}^2", path, volume.size(), depth, matrix));
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".cfl") == 0) {
    write_cfl(path, {matrix, matrix, depth}, volume);
    return;
  }
  if (path.size() < 4 || path.compare(path.size() - 4, 4, ".png") != 0)
    throw ConfigError(fmt::format("output '{}' must end in .cfl or .png", path));
  // The z positions side by side, row by row (z = 0 top left), windowed over the whole volume.
  const int cols = int(std::ceil(std::sqrt(double(depth)))), rows = (depth + cols - 1) / cols;
  const auto m = magnitude(volume);
  std::vector<float> tiles(std::size_t(cols) * rows * plane, 0.f);
  const std::size_t width = std::size_t(cols) * matrix;
  for (int z = 0; z < depth; ++z)
    for (int y = 0; y < matrix; ++y)
      std::copy_n(m.begin() + long(std::size_t(z) * plane + std::size_t(y) * matrix), matrix,
                  tiles.begin() +
                      long((std::size_t(z / cols) * matrix + y) * width + std::size_t(z % cols) * matrix));
  write_png_grey(path, tiles, int(width), rows * matrix, percentile(m, 0.5), percentile(m, 99.5));
}

}  // namespace radstream
