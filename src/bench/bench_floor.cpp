#include "bench/bench_floor.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_stages.hpp"
#include "core/log.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"

namespace radstream::app {

double measured_copy_bandwidth_gb_s() {
  const auto info = gpu::query();
  if (!info.available || !gpu::cuda_stages_built()) return 0;
  const std::size_t bytes = std::size_t(512) << 20;
  gpu::Stream stream;
  DeviceBuffer<unsigned char> a(Extents{bytes}), b(Extents{bytes});
  gpu::memset_device(a.data(), 1, bytes, stream.get());
  gpu::Event t0, t1;
  std::vector<double> ms;
  for (int i = 0; i < 6; ++i) {
    t0.record(stream.get());
    gpu::copy_device(b.data(), a.data(), bytes, stream.get());
    t1.record(stream.get());
    t1.synchronize();
    if (i > 0) ms.push_back(t1.ms_since(t0));  // the first copy warms up
  }
  const double gb_s = 2.0 * double(bytes) / (stats(ms).median * 1e-3) / 1e9;
  log::info("bench: device-to-device copy of 512 MiB: {:.0f} GB/s (read + write), the stages' floor", gb_s);
  return gb_s;
}

nlohmann::ordered_json stage_floors(const nlohmann::ordered_json& stages_ms, const BenchCase& c, int grid,
                                    double gb_per_s) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!(gb_per_s > 0)) return out;
  const double S = double(c.spokes) * c.samples * c.coils * 8;  // samples
  const double Gb = double(c.coils) * grid * grid * 8;          // oversampled grids
  const double Ib = double(c.coils) * c.matrix * c.matrix * 8;  // coil images
  const double Ob = double(c.matrix) * c.matrix * 8;            // the combined image
  int P = 1;
  while (P < 2 * c.samples) P *= 2;  // FBP's padded projections
  const double Pb = double(c.spokes) * P * c.coils * 8;
  const std::map<std::string, double> bytes = {{"density", 2 * S},
                                               {"gridding", S + Gb},
                                               {"density_gridding", S + Gb},
                                               {"fft", 2 * Gb},
                                               {"deapodize", 2 * Ib},
                                               {"coil_combine", Ib + Ob},
                                               {"fft_deapodize_combine", Gb + Ob},
                                               {"fbp_project", S + Pb},
                                               {"backproject", Pb + Ib}};
  for (const auto& [stage, v] : stages_ms.items()) {
    const auto it = bytes.find(stage);
    if (it == bytes.end() || !v.contains("median")) continue;
    const double floor_ms = it->second / (gb_per_s * 1e9) * 1e3;
    out[stage] = {
        {"bytes", it->second}, {"floor_ms", floor_ms}, {"x_floor", v["median"].get<double>() / floor_ms}};
  }
  return out;
}

}  // namespace radstream::app
