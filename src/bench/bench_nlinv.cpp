#include "bench/bench_nlinv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "bench/bench_cg.hpp"
#include "bench/bench_stages.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/image_stats.hpp"
#include "nlinv/nlinv_cuda.hpp"

namespace radstream::app {

nlohmann::ordered_json bart_rtnlinv_reference(const Frame& f, const NlinvParams& p, int frames,
                                              std::span<const cfloat> ours) {
  if (std::system("bart version > /dev/null 2>&1") != 0) return nullptr;
  const auto dir = std::filesystem::temp_directory_path() / "radstream_bench_rtnlinv";
  std::filesystem::create_directories(dir);
  const Geometry& g = f.geometry;
  write_bart_pair(dir.string(), f);
  const std::size_t frame_values = f.data.size();
  std::vector<cfloat> series(frame_values * std::size_t(frames));
  for (int i = 0; i < frames; ++i)
    std::copy(f.data.begin(), f.data.end(), series.begin() + std::ptrdiff_t(frame_values) * i);
  write_cfl((dir / "ks").string(), {1, g.samples, g.spokes, g.coils, 1, 1, 1, 1, 1, 1, frames}, series);
  std::string input = "ks";
  if (p.virtual_coils > 0 && p.virtual_coils < g.coils) {
    const std::string cc =
        fmt::format("cd {} && bart cc -p {} -A ks kc > /dev/null 2>&1", dir.string(), p.virtual_coils);
    if (std::system(cc.c_str()) != 0) return nullptr;
    input = "kc";
  }
  const std::string cmd = fmt::format("cd {} && bart rtnlinv -i {} -T {} -t t {} out > /dev/null 2>&1",
                                      dir.string(), p.newton, p.temporal_damping, input);
  std::vector<double> ms;
  for (int i = 0; i < 2; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (std::system(cmd.c_str()) != 0) return nullptr;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                 frames);
  }
  const CflArray out = read_cfl((dir / "out").string());
  const std::size_t px = std::size_t(g.matrix) * g.matrix;
  nlohmann::ordered_json j = {{"command", fmt::format("bart rtnlinv -i {} -T {} -t t {} out ({} frames)",
                                                      p.newton, p.temporal_damping, input, frames)},
                              {"ms_per_frame", stats(ms).median}};
  if (out.data.size() >= px && ours.size() == px) {
    const std::span<const cfloat> last(out.data.data() + out.data.size() - px, px);
    j["nrmse_ours_vs_bart_last_frame"] = nrmse_scaled(magnitude(ours), magnitude(last));
  }
  std::filesystem::remove_all(dir);
  return j;
}

nlohmann::ordered_json nlinv_operator_times(const Frame& f, const NlinvParams& p, int frames, int warmup) {
  const Geometry& g = f.geometry;
  const std::size_t points = std::size_t(g.spokes) * g.samples;
  gpu::Stream stream;
  auto engine = make_nlinv_cuda_engine(g.matrix, g.coils, points, p, stream.get());
  engine->warm_up();
  DeviceBuffer<float> d_traj(f.traj.extents());
  DeviceBuffer<cfloat> d_data(f.data.extents()), d_out(Extents{std::size_t(g.matrix) * g.matrix});
  gpu::copy_to_device(d_traj.data(), f.traj.data(), f.traj.size() * sizeof(float), stream.get());
  gpu::copy_to_device(d_data.data(), f.data.data(), f.data.size() * sizeof(cfloat), stream.get());
  std::vector<double> frame_ms, newton_ms, cg_ms, cg_count, spent;
  for (int i = 0; i < warmup + frames; ++i) {
    const NlinvFrameReport r = engine->reconstruct(d_traj.data(), d_data.data(), d_out.data());
    if (i < warmup) continue;
    frame_ms.push_back(r.ms);
    newton_ms.push_back(r.ms / std::max(1, r.irgnm.newton_steps));
    cg_ms.push_back(r.ms / std::max(1, r.irgnm.cg_iterations));
    cg_count.push_back(r.irgnm.cg_iterations);
    spent.push_back(r.irgnm.cg_run_ahead_spent);
  }
  // The normal operator alone at the last frame's point (the model keeps it).
  NlinvModel& m = engine->model();
  DeviceBuffer<cfloat> v(Extents{m.unknowns()}), out(Extents{m.unknowns()});
  engine->irgnm().ops().fill(v.data(), v.size(), cfloat{1.f, 0.f});
  std::vector<double> normal_ms;
  for (int i = 0; i < warmup + frames; ++i) {
    gpu::synchronize(stream.get());
    const auto t0 = std::chrono::steady_clock::now();
    m.normal(v.data(), out.data());
    gpu::synchronize(stream.get());
    if (i >= warmup)
      normal_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return {{"frame_ms", json_stats(stats(frame_ms))},
          {"normal_operator_ms", json_stats(stats(normal_ms))},
          {"ms_per_newton_step", stats(newton_ms).median},
          {"ms_per_cg_iteration_all_in", stats(cg_ms).median},
          {"cg_iterations_per_frame", stats(cg_count).median},
          {"cg_iterations_run_ahead_past_convergence_per_frame", stats(spent).median},
          {"grid", m.grid()},
          {"coils_in_the_model", m.coils()}};
}

}  // namespace radstream::app
