// radstream run -c config/realtime.yaml: listen, reconstruct every frame, feed the sinks, and show the stream
// in the viewer when there is a display (--headless: never). Stops on Ctrl-C, when the window is closed,
// after --duration-s or --frames, or (--until-close) when the sender closes its stream; with a window open,
// that last one leaves the image on screen under STREAM ENDED until the window is closed.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <memory>
#include <optional>
#include <thread>

#include "app/commands.hpp"
#include "app/display_options.hpp"
#include "app/interrupt.hpp"
#include "app/recon_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "ingest/protocols.hpp"
#include "io/output_path.hpp"
#include "stream/stream_runtime.hpp"
#ifdef RADSTREAM_HAVE_VIEWER
#include "viewer/viewer_app.hpp"
#endif

namespace radstream::app {
namespace {

// When `run` stops and how it shows the stream (the sections stream:, frames:, sinks:, placement: and recon:
// of the YAML are declared in stream/run_config.hpp and recon/recon_params.hpp).
struct RunControl {
  double duration_s = 0;
  long frames = 0;
  bool until_close = false, headless = false, mrd_stdin = false;
  double stale_after_s = 0;

  template <class V>
  void visit(V& v) {
    v.field("duration", duration_s, 0.0, 1e9, "stop after this many seconds (0: never)");
    v.field("frames", frames, 0L, 1L << 40, "stop after this many frames (0: never)");
    v.field("until_close", until_close, "stop when the sender closes its stream");
    v.field("headless", headless, "no window even when a display is present");
    v.field("mrd_stdin", mrd_stdin,
            "one MRD session from standard input, its images as MRD messages to standard output (logs on "
            "stderr); the run ends with the session (as --mrd-listen -)");
    v.field("stale_after", stale_after_s, 0.0, 3600.0,
            "viewer: dim the image under NO NEW DATA when it is older than S s (0: 3 frame intervals)");
  }
};

struct RunArgs {
  DeclaredOptions options;  // every option of the command, from the declarations below and the recon: section
  RunControl control;
  DisplayChoice display;
  ViewerScriptChoice script;
};

RunConfig load(RunArgs& a) {
  a.options.apply("run", a.control);
  a.options.apply("display", a.display);
  a.options.apply("script", a.script);
  ConfigFileArg f;
  a.options.apply("file", f);
  YAML::Node root;
  if (!f.config.empty()) {
    try {
      root = YAML::LoadFile(f.config);
    } catch (const YAML::BadFile&) {
      throw IoError(f.config + ": cannot read the configuration file");
    } catch (const YAML::Exception& e) {
      throw ConfigError(f.config + ": " + e.what());
    }
  }
  RunConfig c = RunConfig::from_yaml(root, f.config.empty() ? "defaults" : f.config);
  a.options.apply("stream", c.stream);
  a.options.apply("frames", c.frames);
  a.options.apply("sinks", c.sinks);
  a.options.apply("placement", c.placement);
  a.options.apply("mrd", c.mrd);
  a.options.apply("recon", c.recon);
  if (a.control.mrd_stdin) {
    if (!c.mrd.listen.empty() && !c.mrd.pipe())
      throw ConfigError(
          fmt::format("--mrd-stdin and --mrd-listen {}: one MRD front door per run", c.mrd.listen));
    c.mrd.listen = "-";
  }
  if (c.mrd.pipe()) {
    // A stage of a chain of commands: no window, and its ZeroMQ receiver on a free port unless one was
    // asked for (two chained runs never fight over the default port).
    a.control.headless = true;
    if (c.stream.endpoint == IngestParams{}.endpoint) c.stream.endpoint = "tcp://127.0.0.1:*";
  }
  c.validate();
  return c;
}

int run(RunArgs& a) {
  InterruptWatch interrupt;
  const RunConfig cfg = load(a);
  // Every output before anything is received: a run never ends by failing to write what it made.
  if (!cfg.sinks.metrics_json.empty()) check_output_file(cfg.sinks.metrics_json, "--metrics-json", true);
  if (!cfg.sinks.images.empty()) check_output_folder(cfg.sinks.images, "--images");
  const Registry registry = default_registry();
  StreamRuntime p(cfg, registry, make_protocol_servers);
  log::info("run: listening on {} ({} {}), window {} stride {} ({})", cfg.stream.endpoint,
            kReceiveSockets.name(cfg.stream.socket), cfg.stream.bind ? "bind" : "connect", cfg.frames.window,
            cfg.frames.stride, kFramings.name(cfg.frames.framing));
  p.start();
  if (!cfg.mrd.listen.empty() && !cfg.mrd.pipe())
    log::info("run: MRD clients connect to {}", p.endpoint_of("mrd"));
  std::int64_t closed_at = 0;
  bool said_stopping = false;
  auto stop_now = [&] {  // Ctrl-C, --duration-s, --frames: the run (and its window) stops
    if (interrupt.requested()) {
      if (!said_stopping) {
        said_stopping = true;
        log::info("run: interrupted; stopping: {} (Ctrl-C again to stop at once)", p.stop_outlook());
        interrupt.second_stops_at_once("run");
      }
      return true;
    }
    if (p.finished_server()) return true;  // --mrd-stdin: its one session ended
    if (a.control.duration_s > 0 && p.elapsed_s() >= a.control.duration_s) return true;
    return a.control.frames > 0 && p.metrics().frames.load() >= std::uint64_t(a.control.frames);
  };
  auto stream_done = [&] {  // --until-close: the sender closed its stream and every frame due is made
    if (!a.control.until_close || p.metrics().closes.load() == 0) return false;
    // Let the frames already due finish: done once nothing new has come for 0.2 s after the close and the
    // reconstruction has made every frame due (however slow the backend).
    if (!closed_at) closed_at = monotonic_ns();
    return monotonic_ns() - std::max(closed_at, p.metrics().last_message_ns.load()) > 200000000 &&
           p.drained();
  };
  auto done = [&] { return stop_now() || stream_done(); };
  bool shown = false;
#ifdef RADSTREAM_HAVE_VIEWER
  if (!a.control.headless) {
    try {  // with a display the viewer shows the stream; closing its window stops the run
      viewer::ViewerOptions vo;
      // With a window, --until-close leaves the last image on screen under STREAM ENDED until the user
      // closes it (a researcher looks at the end of a replay); the other stop conditions close it.
      vo.should_close = stop_now;
      vo.stream_done = stream_done;
      const viewer::ViewerScript script = viewer_script(a.script);
      if (!script.empty()) vo.driver = std::make_shared<viewer::ScriptedDriver>(script);
      vo.latency_budget_ms = a.display.latency_budget_ms;
      vo.stale_after_s = a.control.stale_after_s;
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
  const std::optional<std::string> session_end = p.finished_server();
  p.stop();
  if (session_end && !session_end->empty()) {  // a chained run whose stream failed fails the chain
    log::error("run: the MRD session on standard input {}", *session_end);
    return 3;
  }
  if (p.metrics().record_failures.load() > 0) {  // a recording that failed is an error, never a silent loss
    log::error("run: the recording failed: {}", p.recording_status());
    return 3;
  }
  return 0;
}

}  // namespace

Runner add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  DeclaredOptions& o = a->options;
  o.add(app, "file", ConfigFileArg{}, config_file_style());
  o.add(app, "stream", IngestParams{},
        {{{"bind", "--connect", true, "connect to the endpoint instead of binding it"}}});
  o.add(app, "frames", FrameParams{},
        {{{"skip_when_behind", "--no-skip", true, "reconstruct every frame even when behind"}}});
  o.add(app, "placement", PlacementParams{}, {{{"assign", "--gpu-assign"}}});
  o.add(app, "mrd", MrdServerParams{},
        {{{"listen", "--mrd-listen"},
          {"max_sessions", "--mrd-max-sessions"},
          {"message_timeout_s", "--mrd-message-timeout"},
          {"header_timeout_s", "--mrd-header-timeout"},
          {"idle_timeout_s", "--mrd-idle-timeout"},
          {"send_timeout_s", "--mrd-send-timeout"},
          {"drain_timeout_s", "--mrd-drain-timeout"},
          {"queue_images", "--mrd-queue-images"},
          {"pixels", "--mrd-pixels"},
          {"frames", "--mrd-frames"},
          {"default_config", "--mrd-default-config"},
          {"allow", "--mrd-allow"},
          {"config_dir", "--mrd-config-dir"}}});
  add_recon_options(app, o, false);  // the same reconstruction options as recon (over the config's recon:)
  o.add(app, "sinks", SinkParams{}, {{{"record_overwrite", "--overwrite,--record-overwrite"}}});
  o.add(app, "run", RunControl{});
  o.add(app, "display", DisplayChoice{});
  o.add(app, "script", ViewerScriptChoice{});
  return [a] { return run(*a); };
}

}  // namespace radstream::app
