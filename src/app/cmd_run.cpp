// radstream run -c config/realtime.yaml: listen, reconstruct every frame, feed the sinks, and show the stream
// in the viewer when there is a display (--headless: never). Stops on Ctrl-C, when the window is closed,
// after
// --duration or --frames, or (--until-close) when the sender closes its stream.
#include <yaml-cpp/yaml.h>

#include <memory>
#include <thread>

#include "app/commands.hpp"
#include "io/output_path.hpp"
#include "app/display_options.hpp"
#include "app/interrupt.hpp"
#include "app/recon_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "stream/stream_runtime.hpp"
#ifdef RADSTREAM_HAVE_VIEWER
#include "viewer/viewer_app.hpp"
#endif

namespace radstream::app {
namespace {

struct RunArgs {
  std::string config;
  std::string endpoint, socket, record, publish, images, metrics_json, curve_key, curve_clients;
  bool insecure = false;
  ReconOptions recon;
  bool connect = false, until_close = false, no_skip = false, headless = false, overwrite = false;
  int window = 0, stride = 0, slices = 0;
  std::string gpus, gpu_assign;
  double duration_s = 0, stale_after_s = 0;
  long frames = 0;
  DisplayChoice display;
};

RunConfig load(const RunArgs& a) {
  YAML::Node root;
  if (!a.config.empty()) {
    try {
      root = YAML::LoadFile(a.config);
    } catch (const YAML::BadFile&) {
      throw IoError(a.config + ": cannot read the configuration file");
    } catch (const YAML::Exception& e) {
      throw ConfigError(a.config + ": " + e.what());
    }
  }
  RunConfig c = RunConfig::from_yaml(root, a.config.empty() ? "defaults" : a.config);
  if (!a.endpoint.empty()) c.stream.endpoint = a.endpoint;
  if (!a.socket.empty()) c.stream.socket = kReceiveSockets.parse(a.socket);
  if (a.connect) c.stream.bind = false;
  if (!a.curve_key.empty()) c.stream.curve_key = a.curve_key;
  if (!a.curve_clients.empty()) c.stream.curve_clients = a.curve_clients;
  if (a.insecure) c.stream.insecure = true;
  if (a.slices) c.stream.slices = a.slices;
  if (!a.gpus.empty()) c.placement.gpus = a.gpus;
  if (!a.gpu_assign.empty()) c.placement.assign = kGpuAssigns.parse(a.gpu_assign);
  if (a.window) c.frames.window = a.window;
  if (a.stride) c.frames.stride = a.stride;
  if (a.no_skip) c.frames.skip_when_behind = false;
  if (c.frames.window > c.frames.max_window) c.frames.max_window = c.frames.window;
  if (!a.record.empty()) c.sinks.record = a.record;
  if (a.overwrite) c.sinks.record_overwrite = true;
  if (!a.publish.empty()) c.sinks.publish = a.publish;
  if (!a.images.empty()) c.sinks.images = a.images;
  if (!a.metrics_json.empty()) c.sinks.metrics_json = a.metrics_json;
  a.recon.apply(c.recon);
  c.validate();
  return c;
}

int run(const RunArgs& a) {
  InterruptWatch interrupt;
  const RunConfig cfg = load(a);
  // Every output before anything is received: a run never ends by failing to write what it made.
  if (!cfg.sinks.metrics_json.empty()) check_output_file(cfg.sinks.metrics_json, "--metrics-json", true);
  if (!cfg.sinks.images.empty()) check_output_folder(cfg.sinks.images, "--images");
  const Registry registry = default_registry();
  StreamRuntime p(cfg, registry);
  log::info("run: listening on {} ({} {}), window {} stride {} ({})", cfg.stream.endpoint, kReceiveSockets.name(cfg.stream.socket),
            cfg.stream.bind ? "bind" : "connect", cfg.frames.window, cfg.frames.stride, kFramings.name(cfg.frames.framing));
  p.start();
  std::int64_t closed_at = 0;
  auto done = [&] {
    if (interrupt.requested()) {
      log::info("run: interrupted; stopping");
      return true;
    }
    if (a.duration_s > 0 && p.elapsed_s() >= a.duration_s) return true;
    if (a.frames > 0 && p.metrics().frames.load() >= std::uint64_t(a.frames)) return true;
    if (a.until_close && p.metrics().closes.load() > 0) {
      // Let the frames already due finish: stop once nothing new has come for 0.2 s after the close and the
      // reconstruction has made every frame due (however slow the backend).
      if (!closed_at) closed_at = monotonic_ns();
      if (monotonic_ns() - std::max(closed_at, p.metrics().last_message_ns.load()) > 200000000 && p.drained())
        return true;
    }
    return false;
  };
  bool shown = false;
#ifdef RADSTREAM_HAVE_VIEWER
  if (!a.headless) {
    try {  // with a display the viewer shows the stream; closing its window stops the run
      viewer::ViewerOptions vo;
      vo.should_close = done;
      vo.stale_after_s = a.stale_after_s;
      vo.clinical = a.display.clinical;
      vo.preset = a.display.preset;
      vo.tip_marker = a.display.tip_marker;
      vo.orientation = a.display.orientation;
      viewer::Viewer v(p, vo);
      v.run();
      shown = true;
    } catch (const viewer::Unavailable& e) {
      log::info("run: headless ({})", e.what());
    }
  }
#endif
  while (!shown && !done()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  p.stop();
  if (p.metrics().record_failures.load() > 0) {  // a recording that failed is an error, never a silent loss
    log::error("run: the recording failed: {}", p.recording_status());
    return 3;
  }
  return 0;
}

}  // namespace

Runner add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  app.add_option("-c,--config", a->config, "YAML with stream:, frames:, sinks:, recon: sections");
  app.add_option("--endpoint", a->endpoint, "receive on this ZeroMQ endpoint (overrides stream.endpoint)");
  app.add_option("--socket", a->socket, "pull (default) | sub");
  app.add_flag("--connect", a->connect, "connect to the endpoint instead of binding it");
  app.add_option("--curve-key", a->curve_key, "CURVE: this receiver's key pair file (radstream keygen; stream.curve_key)");
  app.add_option("--curve-clients", a->curve_clients,
                 "CURVE: file of the public keys admitted, one per line (stream.curve_clients)");
  app.add_flag("--insecure", a->insecure,
               "allow a non-local or wildcard endpoint without CURVE (any host could inject spokes; stream.insecure)");
  app.add_option("--window", a->window, "spokes per frame (frames.window)")->check(CLI::PositiveNumber);
  app.add_option("--slices", a->slices, "slices of the stream (idx.slice 0..N-1), one worker each (stream.slices)")
      ->check(CLI::PositiveNumber);
  app.add_option("--gpus", a->gpus, "GPUs for the slices' workers, e.g. 0,1,2,3 (placement.gpus)");
  app.add_option("--gpu-assign", a->gpu_assign, "static | least-loaded (placement.assign)");
  app.add_option("--stride", a->stride, "a new frame every S spokes (frames.stride)")->check(CLI::PositiveNumber);
  app.add_flag("--no-skip", a->no_skip, "reconstruct every frame even when behind (frames.skip_when_behind)");
  a->recon.add_to(app, false);  // the same reconstruction options as recon (over the config's recon:)
  app.add_option("--record", a->record, "record every received spoke into this MRD .h5 file (its folder is made)");
  app.add_flag("--overwrite", a->overwrite, "allow --record to replace an existing file");
  app.add_option("--publish", a->publish, "publish images on this ZeroMQ PUB endpoint");
  app.add_option("--images", a->images, "write image files into this folder");
  app.add_option("--metrics-json", a->metrics_json, "write the metrics report here at the end");
  app.add_option("--duration", a->duration_s, "stop after this many seconds");
  app.add_option("--frames", a->frames, "stop after this many frames");
  app.add_flag("--until-close", a->until_close, "stop when the sender closes its stream");
  app.add_flag("--headless", a->headless, "no window even when a display is present");
  add_display_options(app, a->display);
  app.add_option("--stale-after", a->stale_after_s,
                 "viewer: dim the image under NO NEW DATA when it is older than S s (default: 3 frame intervals)");
  return [a] { return run(*a); };
}

}  // namespace radstream::app
