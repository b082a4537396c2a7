#include "recon/offline_volume_sense.hpp"

#include <algorithm>
#include <chrono>

#include "core/coil_map_power.hpp"
#include "core/log.hpp"
#include "core/magnitude.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "recon/volume_sense.hpp"

namespace radstream {
namespace {

// The partitions' maps side by side, [P][C][N][N], and their largest peak power.
std::vector<cfloat> stack_maps(const std::vector<HostBuffer<cfloat>>& maps, std::size_t coils,
                               std::size_t pixels, double& peak) {
  std::vector<cfloat> all;
  all.reserve(maps.size() * coils * pixels);
  for (const auto& m : maps) all.insert(all.end(), m.data(), m.data() + coils * pixels);
  peak = volume_map_peak_power(all.data(), maps.size(), coils, pixels);
  return all;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<cfloat> solve_volume_sense(const VolumeSenseInput& in, const ReconParams& params, Backend backend,
                                       int repeat) {
  const std::vector<Frame>& frames = *in.frames;
  const Geometry& g = frames[0].geometry;
  const int P = int(frames.size()), N = g.matrix;
  const std::size_t pixels = std::size_t(N) * N, points = frames[0].traj.size() / 2;
  const VolumeSenseShape shape{N, P, g.coils, points};
  double peak = 0;
  const std::vector<cfloat> maps = stack_maps(*in.maps, std::size_t(g.coils), pixels, peak);
  std::vector<cfloat> image(std::size_t(P) * pixels);
  std::vector<double> times;
  const int runs = repeat > 1 ? repeat + 1 : 1;  // the first of several untimed
  if (backend == Backend::Cuda) {
    const gpu::Stream stream;
    auto solver = make_volume_sense_cuda(shape, params.cg, params.gridding.kernel(), stream.get());
    DeviceBuffer<cfloat> d_maps(Extents{maps.size()}), d_x(Extents{image.size()});
    gpu::copy_to_device(d_maps.data(), maps.data(), maps.size() * sizeof(cfloat), stream.get());
    solver->set_maps(d_maps.data(), peak);
    for (int r = 0; r < runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      solver->solve(in.d_data, in.d_traj, d_x.data(), false);
      stream.synchronize();
      if (runs == 1 || r > 0) times.push_back(ms_since(t0));
    }
    gpu::copy_to_host(image.data(), d_x.data(), image.size() * sizeof(cfloat), stream.get());
    stream.synchronize();
    log::info("cg-sense: the volume's relative residual {:.3g}", solver->residual());
  } else {
    std::vector<cfloat> data;
    data.reserve(std::size_t(P) * frames[0].data.size());
    for (const Frame& f : frames) data.insert(data.end(), f.data.begin(), f.data.end());
    auto solver = make_volume_sense_cpu(shape, params.cg, params.gridding.kernel(), params.threads);
    solver->set_maps(maps.data(), peak);
    for (int r = 0; r < runs; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      solver->solve(data.data(), frames[0].traj.data(), image.data(), false);
      if (runs == 1 || r > 0) times.push_back(ms_since(t0));
    }
    log::info("cg-sense: the volume's relative residual {:.3g}", solver->residual());
  }
  // Magnitudes in the real parts, as every chain's image (the per-partition route's volume is the same).
  magnitude_image(image.data(), image.size(), image.data());
  std::sort(times.begin(), times.end());
  log::info(
      "reconstruction: cg-sense over the volume, {} partitions of {} in one solve of {} iterations: median "
      "{:.2f} ms over {} run(s) (min {:.2f}, max {:.2f}{})",
      P, g.str(), params.cg.iterations, times[times.size() / 2], times.size(), times.front(), times.back(),
      repeat > 1 ? ", after an untimed one" : "");
  return image;
}

}  // namespace radstream
