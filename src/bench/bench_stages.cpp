#include "bench/bench_stages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <random>

#include "gpu/device_memory.hpp"

namespace radstream::app {

Stats stats(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, std::size_t(q * double(v.size() - 1) + 0.5))]; };
  return {at(0.5), at(0.1), at(0.9), at(0.99)};
}

nlohmann::ordered_json json_stats(const Stats& s) {
  return {{"median", s.median}, {"p10", s.p10}, {"p90", s.p90}, {"p99", s.p99}};
}

Stats time_cuda_recipe(const Recipe& recipe, const ReconParams& p, const Registry& registry,
                       const Geometry& g, const Extents& input, int frames, int warmup) {
  Context ctx;
  ctx.backend = Backend::Cuda;
  gpu::Stream stream;
  ctx.stream = stream.get();
  gpu::Event start, stop;
  std::vector<double> ms;
  {
    std::vector<std::unique_ptr<Stage>> stages;
    std::vector<DeviceBuffer<cfloat>> buffers;
    buffers.emplace_back(input);
    std::vector<int> out_of;
    Extents ext = input;
    std::string in_name = "grid";
    for (const auto& step : recipe.steps) {
      stages.push_back(registry.create(step.stage, Backend::Cuda, p));
      const Extents out = stages.back()->configure(g, ext, ctx);
      if (step.output != in_name) buffers.emplace_back(out);  // else in place (the input is re-uploaded)
      out_of.push_back(int(buffers.size()) - 1);
      in_name = step.output;
      ext = out;
    }
    std::vector<cfloat> host(input.size());
    std::mt19937 rng(1);
    std::normal_distribution<float> d(0.f, 1.f);
    for (auto& v : host) v = cfloat(d(rng), d(rng));
    // An in-place FFT would grow the data frame after frame; it is re-uploaded outside the timed events.
    for (int i = 0; i < warmup + frames; ++i) {
      gpu::copy_to_device(buffers[0].data(), host.data(), host.size() * sizeof(cfloat), ctx.stream);
      start.record(ctx.stream);
      const FrameContext frame;
      View<const cfloat> in = buffers[0].view();
      for (std::size_t s = 0; s < stages.size(); ++s) {
        View<cfloat> out = buffers[out_of[s]].view();
        stages[s]->process(frame, in, out, ctx);
        in = out;
      }
      stop.record(ctx.stream);
      gpu::synchronize(ctx.stream);
      if (i >= warmup) ms.push_back(stop.ms_since(start));
    }
    stages.clear();
  }
  return stats(ms);
}

}  // namespace radstream::app
