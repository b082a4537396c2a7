// radstream demo: the main job. Until the streaming path and the viewer exist, it runs offline and headless:
// the simulator produces a golden-angle catheter phantom, the pipeline reconstructs sliding-window frames and
// writes each as PNG, plus a metrics JSON (frame times).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "app/commands.hpp"
#include "app/recon_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/frame_io.hpp"
#include "pipeline/recon_chain.hpp"
#include "sim/simulator.hpp"

namespace radstream::app {
namespace {

struct DemoArgs {
  SimParams sim;
  ReconOptions recon;
  std::string out_dir = "out/demo";
  int frames = 24;
  int window = 89;
  int stride = 16;
};

int run_demo(DemoArgs a) {
  if (a.frames < 1 || a.window < 1 || a.stride < 1)
    throw ConfigError("--frames, --window and --stride must be >= 1");
  a.sim.motion = true;
  const ReconParams params = a.recon.resolve();
  const Simulator sim(a.sim);
  const BackendDecision backend = resolve_backend(params.backend);
  log::info("demo (offline, headless: the live viewer comes with the streaming and viewer work)");
  log::info("backend: {} ({})", to_string(backend.backend), backend.reason);
  std::filesystem::create_directories(a.out_dir);

  const long total = long(a.window) + long(a.frames - 1) * a.stride;
  log::info("simulating {} spokes of {} coils x {} samples ({} angles, moving tip)", total, a.sim.coils,
            sim.samples(), a.sim.angles);
  const auto spokes = sim.spokes(0, int(total));

  const Registry registry = default_registry();
  ReconChain chain(params, backend.backend, registry);
  chain.configure(sim.header().geometry(a.window));
  std::vector<double> ms;
  Frame frame(chain.geometry());  // one buffer, refilled for every frame
  for (int f = 0; f < a.frames; ++f) {
    for (int s = 0; s < a.window; ++s) frame.set_spoke(s, spokes[std::size_t(f) * a.stride + s]);
    const auto t0 = std::chrono::steady_clock::now();
    const auto image = chain.reconstruct(frame);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    char name[64];
    std::snprintf(name, sizeof name, "frame_%04d.png", f);
    write_image((std::filesystem::path(a.out_dir) / name).string(), image.span(), sim.header().matrix);
    log::info("frame {}/{}: spokes {}..{}, {:.1f} ms", f + 1, a.frames, f * a.stride,
              f * a.stride + a.window - 1, ms.back());
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  const auto pct = [&](double q) {
    return sorted[std::min(sorted.size() - 1, std::size_t(q * sorted.size()))];
  };
  const std::string metrics = (std::filesystem::path(a.out_dir) / "metrics.json").string();
  std::ofstream m(metrics);
  m << fmt::format(
      "{{\"mode\": \"offline-headless\", \"backend\": \"{}\", \"frames\": {}, \"window\": {}, \"stride\": "
      "{},\n"
      " \"geometry\": \"{}\", \"frame_ms\": {{\"p50\": {:.3f}, \"p95\": {:.3f}, \"max\": {:.3f}}},\n"
      " \"frames_per_s\": {:.1f}}}\n",
      to_string(backend.backend), a.frames, a.window, a.stride, chain.geometry().str(), pct(0.5), pct(0.95),
      sorted.back(), 1000.0 / pct(0.5));
  log::info("demo: {} frames in {}, median {:.1f} ms per frame ({:.1f} frames/s); metrics in {}", a.frames,
            a.out_dir, pct(0.5), 1000.0 / pct(0.5), metrics);
  return 0;
}

}  // namespace

Runner add_demo(CLI::App& app) {
  auto a = std::make_shared<DemoArgs>();
  a->sim.coils = 8;
  a->sim.snr = 40.0;
  app.add_option("--out-dir", a->out_dir, "where the PNG frames and metrics.json go (default out/demo)");
  app.add_option("--frames", a->frames, "frames to reconstruct (default 24)");
  app.add_option("--window", a->window, "spokes per frame W (default 89)");
  app.add_option("--stride", a->stride, "new frame every S spokes (default 16)");
  app.add_option("--matrix", a->sim.matrix, "image matrix N (default 256)");
  app.add_option("--coils", a->sim.coils, "coils (default 8)");
  app.add_option("--snr", a->sim.snr, "k-space SNR (default 40)");
  app.add_option("--angles", a->sim.angles, "angle scheme (default golden)");
  a->recon.add_to(app);
  return [a] { return run_demo(*a); };
}

}  // namespace radstream::app
