// radstream demo: the main job. The simulator (golden angles, a moving catheter tip) streams over ZeroMQ
// (tcp loopback) into the pipeline (GPU when present) and the viewer shows it live. Without a display (or
// with --headless) the same simulator and pipeline run for a fixed number of frames and write PNG snapshots
// and the metrics JSON instead, and say so.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "app/commands.hpp"
#include "app/display_options.hpp"
#include "app/interrupt.hpp"
#include "app/recon_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/trajectory.hpp"
#include "ingest/protocols.hpp"
#include "io/output_path.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/sim_streamer.hpp"
#ifdef RADSTREAM_HAVE_VIEWER
#include "viewer/scripted_driver.hpp"
#include "viewer/viewer_app.hpp"
#endif

namespace radstream::app {
namespace {

// The demo's own settings (the simulator's are SimParams', the reconstruction's ReconParams').
struct DemoControl {
  std::string out_dir = "out/demo";
  bool headless = false;
  int frames = 60;  // headless: frames to reconstruct
  int snapshot_every = 10;
  int window = 128;
  int stride = 16;
  int pool = 4096;
  std::string gpus;
  int set_window = 0;
  std::string apply_backend;
  double stale_after_s = 0, stop_sending_after_s = 0;

  template <class V>
  void visit(V& v) {
    v.field("headless", headless, "no window: a fixed number of frames, PNG snapshots and metrics");
    v.field("out_dir", out_dir, "snapshots and metrics.json go here");
    v.field("frames", frames, 1, 1 << 30, "headless: frames to reconstruct");
    v.field("snapshot_every", snapshot_every, 1, 1 << 30, "headless: a PNG every N frames");
    v.field("window", window, 1, 1 << 16, "spokes per frame W");
    v.field("stride", stride, 1, 1 << 16, "new frame every S spokes");
    v.field("gpus", gpus, "GPUs for the slices' workers, e.g. 0,1 (empty: the current GPU)");
    v.field("pool", pool, 0, 1 << 24,
            "precomputed spokes sent cyclically (the tip's path repeats with them: 4096 at 400 spokes/s is a "
            "10 s loop, the tip at up to 30 mm/s), 0 = compute live");
    v.field("set_window", set_window, 0, 1 << 16,
            "viewer: move the window slider to W at 1 s (tests; 0: off)");
    v.field("apply_backend", apply_backend, "viewer: choose this backend and press Apply at 1.5 s (tests)");
    v.field("stale_after", stale_after_s, 0.0, 3600.0,
            "viewer: dim the image under NO NEW DATA when it is older than S s (0: 3 frame intervals)");
    v.field(
        "stop_sending_after", stop_sending_after_s, 0.0, 1e9,
        "the simulator goes quiet after S s while the viewer stays (tests the freshness banner; 0: never)");
  }
};

struct DemoArgs : DemoControl {
  SimParams sim;
  ReconParams recon;
  DisplayChoice display;
  ViewerScriptChoice script;
  bool period_given = false;  // --motion-period-s was given (else the pool's loop sets it)
  // The demo's phantom has a bright rim: the object preset windows on the inside, so the tissue is not
  // squeezed into dark grey (run keeps auto: its data are anyone's).
  DemoArgs() { display.preset = display::WindowPreset::Object; }
};

// The run's configuration: the simulator's stream on any free loopback port, the demo's window, metrics
// (and, headless, PNG snapshots) in the output folder. Checks the options before anything starts.
RunConfig demo_config(DemoArgs& a, bool headless) {
  if (a.frames < 1 || a.window < 1 || a.stride < 1 || a.snapshot_every < 1)
    throw ConfigError("--frames, --window, --stride and --snapshot-every must be >= 1");
  try {  // the phantom's settings are checked before anything starts or is written
    parse_angle_scheme(a.sim.angles);
  } catch (const ConfigError& e) {
    throw ConfigError("--angles " + a.sim.angles + ": " + e.what());
  }
  if (a.sim.slices < 1 || a.sim.slices > kMaxSlices)
    throw ConfigError(fmt::format("--slices {} is outside 1..{}", a.sim.slices, kMaxSlices));
  check_output_folder(a.out_dir, "--out-dir");
  a.sim.motion = true;
  const int cycle = a.sim.slices * a.sim.partitions;  // slices and partitions cycle together
  if (a.pool % cycle) a.pool += cycle - a.pool % cycle;
  if (a.pool > 0 && !a.period_given)  // the pool loops seamlessly unless a period was asked for
    a.sim.motion_period_s = double(a.pool) / a.sim.rate_hz;
  RunConfig cfg;
  cfg.recon = a.recon;
  cfg.stream.endpoint = "tcp://127.0.0.1:*";  // any free port; the simulator connects to it
  cfg.frames.window = a.window;
  cfg.frames.stride = a.stride;
  // A stack of stars' ring holds every partition's spokes of the window: room for twice the window.
  cfg.frames.max_window = a.sim.partitions > 1 ? std::max(64, 2 * a.window) : std::max(1024, a.window);
  cfg.stream.slices = a.sim.slices;
  cfg.placement.gpus = a.gpus;
  cfg.sinks.metrics_json = (std::filesystem::path(a.out_dir) / "metrics.json").string();
  cfg.sinks.report_interval_s = 1.0;
  if (headless) {
    cfg.sinks.images = a.out_dir;
    cfg.sinks.image_every = a.snapshot_every;
  }
  return cfg;
}

// Whether a window can be opened: a build with the viewer and a display.
bool want_viewer(const DemoArgs& a) {
#ifndef RADSTREAM_HAVE_VIEWER
  if (!a.headless) log::info("demo: this build has no viewer (RADSTREAM_VIEWER=OFF or GLFW/ImGui missing)");
  return false;
#else
  if (a.headless) return false;
  if (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY")) {
    // Said before anything starts: without a display the pipeline and the simulator start once, headless.
    log::info("demo: no display (DISPLAY and WAYLAND_DISPLAY are unset); running headless");
    return false;
  }
  return true;
#endif
}

#ifdef RADSTREAM_HAVE_VIEWER
// Shows the stream until the window is closed; throws viewer::Unavailable when no window can be opened.
void show(StreamRuntime& p, const DemoArgs& a, InterruptWatch& interrupt,
          std::function<std::string()> waiting_note) {
  viewer::ViewerOptions vo;
  vo.snapshot_dir = (std::filesystem::path(a.out_dir) / "snapshots").string();
  viewer::ViewerScript script = viewer_script(a.script);
  script.set_window = a.set_window;
  script.apply_backend = a.apply_backend;
  if (!script.empty()) vo.driver = std::make_shared<viewer::ScriptedDriver>(script);
  vo.stale_after_s = a.stale_after_s;
  vo.latency_budget_ms = a.display.latency_budget_ms;
  vo.clinical = a.display.clinical;
  vo.preset = a.display.preset;
  vo.tip_marker = a.display.tip_marker;
  vo.orientation = a.display.orientation;
  vo.should_close = [&] { return interrupt.requested(); };
  vo.waiting_note = std::move(waiting_note);
  viewer::Viewer v(p, vo);
  v.run();
}
#endif

// Test hook: the sender goes quiet after S seconds while the viewer stays (the freshness banner's test).
std::jthread quiet_after(SimStreamer& streamer, double s) {
  if (s <= 0) return {};
  return std::jthread([&streamer, s](std::stop_token st) {
    try {
      const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
      while (!st.stop_requested() && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (!st.stop_requested()) streamer.stop();
    } catch (const std::exception& e) {
      log::error("demo: {}", e.what());
    }
  });
}

// The simulated scanner, made beside the window: its pool of precomputed spokes takes seconds on a small
// machine (39-54 s under load), and the window opens at once, saying so, instead of after them. The pipeline
// starts when the scanner is ready, so that it never waits, saying "waiting for a sender", on the demo's own
// simulator.
class ScannerPrep {
 public:
  ScannerPrep(const DemoArgs& a, StreamRuntime& p) : t0_(std::chrono::steady_clock::now()) {
    thread_ = std::jthread([this, &a, &p] {
      try {
        StreamerParams sp;
        sp.sender.endpoint.clear();  // the pipeline's own port, known once it has bound one (set_endpoint)
        sp.pool = a.pool;
        auto streamer = std::make_unique<SimStreamer>(a.sim, sp);
        p.start();
        streamer->set_endpoint(p.endpoint());
        streamer->start();
        quiet_ = quiet_after(*streamer, a.stop_sending_after_s);
        std::lock_guard lock(m_);
        streamer_ = std::move(streamer);
      } catch (const std::exception& e) {
        log::error("demo: the simulated scanner could not start: {}", e.what());
        std::lock_guard lock(m_);
        error_ = e.what();
      }
      ready_ = true;
    });
  }
  // What the window says until the first image: the preparation and its seconds so far.
  std::string note() const {
    std::lock_guard lock(m_);
    if (!error_.empty()) return "the simulated scanner could not start: " + error_;
    if (ready_) return {};
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    return fmt::format("preparing the simulated scanner ({:.0f} s)", s);
  }
  // Waits for the preparation; whether the scanner runs.
  bool wait() {
    if (thread_.joinable()) thread_.join();
    return streamer_ != nullptr;
  }
  // Stops the scanner (after its preparation, if that is still going on).
  void stop() {
    wait();
    if (quiet_.joinable()) {  // before stopping the streamer here: never two stop() calls at once
      quiet_.request_stop();
      quiet_.join();
    }
    if (streamer_) streamer_->stop();
  }

 private:
  std::chrono::steady_clock::time_point t0_;
  mutable std::mutex m_;
  std::unique_ptr<SimStreamer> streamer_;
  std::string error_;
  std::atomic<bool> ready_{false};
  std::jthread quiet_;  // the freshness test's hook: the sender goes quiet after a while
  std::jthread thread_;
};

int run_demo(DemoArgs a) {
  InterruptWatch interrupt;
  bool headless = !want_viewer(a);
  const RunConfig cfg = demo_config(a, headless);
  const Registry registry = default_registry();
  StreamRuntime p(cfg, registry, make_protocol_servers);
  ScannerPrep prep(a, p);
  const auto stop_all = [&] {
    prep.stop();
    p.stop();
  };
#ifdef RADSTREAM_HAVE_VIEWER
  if (!headless) {
    try {
      show(p, a, interrupt, [&prep] { return prep.note(); });
    } catch (const viewer::Unavailable& e) {  // a display that would not open a window: start over headless
      log::info("demo: no viewer ({}); running headless: {} frames, PNG snapshots and metrics in {}",
                e.what(), a.frames, a.out_dir);
      stop_all();
      a.headless = true;
      return run_demo(a);
    }
  }
#endif
  if (headless) {
    if (!prep.wait()) {
      stop_all();
      return 3;
    }
    log::info(
        "demo: headless: {} frames of the simulated catheter phantom, PNG every {} frames, metrics in {}",
        a.frames, a.snapshot_every, cfg.sinks.metrics_json);
    while (p.metrics().frames.load() < std::uint64_t(a.frames) && !interrupt.requested())
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop_all();
  return 0;
}

}  // namespace

SimParams demo_sim() {
  SimParams p;
  p.matrix = 192;
  p.coils = 8;
  p.snr = 40.0;
  p.rate_hz = 400;
  p.motion = true;  // the demo's tip always moves (no --motion here)
  p.motion_period_s = double(DemoControl{}.pool) / p.rate_hz;  // the default pool loops seamlessly: 10.24 s
  return p;
}

Runner add_demo(CLI::App& app) {
  auto o = std::make_shared<DeclaredOptions>();
  o->add(app, "demo", DemoControl{});
  o->add(app, "display", DemoArgs{}.display);  // the demo's own defaults (the object preset)
  o->add(app, "script", ViewerScriptChoice{});
  o->add(app, "simulate", demo_sim(),
         {{{"rate_hz", "--rate"},
           {"readout_oversampling", "--readout-os"},
           {"tiny_golden_n", "--tiny-n"},
           {"motion", ""}}});
  add_recon_options(app, *o);
  return [o] {
    DemoArgs a;
    o->apply("demo", static_cast<DemoControl&>(a));
    o->apply("display", a.display);
    o->apply("script", a.script);
    a.sim = demo_sim();
    o->apply("simulate", a.sim);
    a.period_given = o->given("simulate", "motion_period_s");
    a.recon = resolve_recon(*o);
    return run_demo(a);
  };
}

}  // namespace radstream::app
