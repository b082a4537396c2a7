#include "exact/exact_slices.hpp"

#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.hpp"
#include "core/gpu_list.hpp"
#include "gpu/cuda_runtime.hpp"
#include "gpu/handles.hpp"

namespace radstream {

ExactSlicesResult exact_reconstruct_slices(const std::vector<ExactSlice>& slices, int coils,
                                           const ExactReconOptions& o, int gpus) {
  std::vector<int> devices;
  if (o.gpu) {
    const int have = gpu::query().device_count;
    if (gpus < 0 || gpus > have)
      throw ConfigError("exact slices: " + std::to_string(gpus) + " GPUs asked for, this machine has " +
                        std::to_string(have));
    for (int d = 0; d < (gpus == 0 ? have : gpus); ++d) devices.push_back(d);
  }
  return exact_reconstruct_slices(slices, coils, o, devices);
}

ExactSlicesResult exact_reconstruct_slices(const std::vector<ExactSlice>& slices, int coils,
                                           const ExactReconOptions& o, const std::vector<int>& gpus) {
  const auto t0 = std::chrono::steady_clock::now();
  ExactSlicesResult r;
  r.slices.resize(slices.size());
  r.device_of.assign(slices.size(), -1);
  for (std::size_t i = 0; i < slices.size(); ++i)
    if (!slices[i].model || !slices[i].kdata)
      throw ConfigError("exact slices: slice " + std::to_string(i) + " has no model or data");
  if (!o.gpu) {
    for (std::size_t i = 0; i < slices.size(); ++i)
      r.slices[i] = exact_reconstruct(*slices[i].model, *slices[i].kdata, coils, o);
  } else {
    const int have = gpu::query().device_count;
    std::vector<int> devices = gpus;
    if (devices.empty())
      for (int d = 0; d < have; ++d) devices.push_back(d);
    check_gpus_exist(devices, have, "exact slices");
    const int use = std::max(1, std::min(int(devices.size()), int(slices.size())));
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex m;
    std::exception_ptr error;
    std::string where;
    std::vector<std::thread> workers;
    for (int d = 0; d < use; ++d)
      workers.emplace_back([&, d = devices[std::size_t(d)]] {
        std::size_t i = 0;
        try {
          gpu::DeviceGuard on(d);
          while (!failed && (i = next++) < slices.size()) {
            r.slices[i] = exact_reconstruct(*slices[i].model, *slices[i].kdata, coils, o);
            r.device_of[i] = d;
          }
        } catch (...) {
          std::lock_guard lock(m);
          if (!error) {
            error = std::current_exception();
            where = "slice " + std::to_string(i) + " on GPU " + std::to_string(d);
          }
          failed = true;
        }
      });
    for (auto& w : workers) w.join();
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        throw Error("exact slices: " + where + ": " + e.what());
      }
    }
  }
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace radstream
