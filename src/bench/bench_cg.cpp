#include "bench/bench_cg.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "bench/bench_stages.hpp"
#include "core/log.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "recon/coil_map_estimate.hpp"
#include "sim/simulator.hpp"
#ifdef RADSTREAM_HAVE_CUDA
#include "fft/cufft_plan.hpp"
#include "gpu/device_memory.hpp"
#include "noncart/sense_operator_cuda.hpp"
#endif

namespace radstream::app {

void write_bart_pair(const std::string& dir, const Frame& f) {
  const Geometry& g = f.geometry;
  std::vector<cfloat> traj(std::size_t(g.spokes) * g.samples * 3);
  for (std::size_t j = 0; j < std::size_t(g.spokes) * g.samples; ++j) {
    traj[3 * j] = cfloat(f.traj[2 * j] * g.matrix, 0);
    traj[3 * j + 1] = cfloat(f.traj[2 * j + 1] * g.matrix, 0);
  }
  write_cfl(dir + "/t", {3, g.samples, g.spokes}, traj);
  write_cfl(dir + "/k", {1, g.samples, g.spokes, g.coils}, f.data.view().span());
}

SimParams bench_simulation(int matrix, int samples, int coils) {
  SimParams sp;
  sp.matrix = matrix;
  sp.readout_os = double(samples) / matrix;
  sp.coils = coils;
  sp.snr = 50;
  return sp;
}

Frame bench_frame(int matrix, int samples, int coils, int spokes) {
  const Simulator sim(bench_simulation(matrix, samples, coils));
  return frame_from_spokes(sim.header(), sim.spokes(0, spokes));
}

HostBuffer<cfloat> bench_maps(const Frame& f) {
  return estimate_coil_maps(f.data.view(), f.traj.view(), f.geometry.matrix);
}

nlohmann::ordered_json normal_operator_floor(const Frame& f, const HostBuffer<cfloat>& maps,
                                             const ReconParams& p, int frames, int warmup) {
#ifdef RADSTREAM_HAVE_CUDA
  const Geometry& g = f.geometry;
  const int N = g.matrix, M = 2 * N;
  const std::size_t n = std::size_t(g.spokes) * g.samples, P = std::size_t(N) * N;
  gpu::Stream stream;
  const auto s = stream.get();
  std::vector<double> normal_ms, floor_ms;
  {
    DeviceBuffer<cfloat> d_maps(maps.extents()), x(Extents{P}), z(Extents{P});
    DeviceBuffer<float> d_traj(f.traj.extents());
    gpu::copy_to_device(d_maps.data(), maps.data(), maps.size() * sizeof(cfloat), s);
    gpu::copy_to_device(d_traj.data(), f.traj.data(), f.traj.size() * sizeof(float), s);
    gpu::memset_device(x.data(), 0, P * sizeof(cfloat), s);
    SenseOperatorCuda op(N, g.coils, n, p.gridding.kernel(), true, s);
    op.set_maps(d_maps.data());
    op.set_points(d_traj.data());
    CufftPlan fft({M, M}, g.coils, s);
    DeviceBuffer<cfloat> grids(Extents{std::size_t(g.coils), std::size_t(M), std::size_t(M)});
    gpu::memset_device(grids.data(), 0, grids.size() * sizeof(cfloat), s);
    gpu::Event a, b, c;
    for (int i = 0; i < warmup + frames; ++i) {
      a.record(s);
      op.normal(x.data(), z.data());
      b.record(s);
      fft.execute(grids.data(), FftDirection::Forward);
      fft.execute(grids.data(), FftDirection::Inverse);
      c.record(s);
      c.synchronize();
      if (i < warmup) continue;
      normal_ms.push_back(b.ms_since(a));
      floor_ms.push_back(c.ms_since(b));
    }
    gpu::synchronize(s);
  }
  const Stats sn = stats(normal_ms), sf = stats(floor_ms);
  log::info(
      "toeplitz normal operator: {:.4f} ms per application; floor (cuFFT forward + inverse of {} x {}^2) "
      "{:.4f} ms ({:.2f}x)",
      sn.median, g.coils, M, sf.median, sn.median / sf.median);
  return {{"normal_ms", json_stats(sn)},
          {"floor", fmt::format("cuFFT forward + inverse of {} x {}^2", g.coils, M)},
          {"floor_ms", json_stats(sf)},
          {"normal_over_floor", sn.median / sf.median}};
#else
  (void)f, (void)maps, (void)p, (void)frames, (void)warmup;
  return nullptr;
#endif
}

nlohmann::ordered_json bart_pics_reference(const Frame& f, const HostBuffer<cfloat>& maps, int iterations,
                                           double lambda) {
  if (std::system("bart version > /dev/null 2>&1") != 0) return nullptr;
  const auto dir = std::filesystem::temp_directory_path() / "radstream_bench_pics";
  std::filesystem::create_directories(dir);
  const Geometry& g = f.geometry;
  write_bart_pair(dir.string(), f);
  write_cfl((dir / "s").string(), {g.matrix, g.matrix, 1, g.coils}, maps.view().span());
  const std::string cmd = fmt::format("cd {} && bart pics -S -l2 -r {} -i {} -t t k s out > /dev/null 2>&1",
                                      dir.string(), lambda, iterations);
  std::vector<double> ms;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::system(cmd.c_str()) != 0) return nullptr;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::filesystem::remove_all(dir);
  return stats(ms).median;
}

}  // namespace radstream::app
