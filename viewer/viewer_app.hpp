// The live viewer: a GLFW window with OpenGL 3.3 core and Dear ImGui (1.86) on the render thread, showing
// the newest frame of a running StreamRuntime (latest wins; the loop never waits for the pipeline), with the
// controls, status and plots of DESIGN.md section 7. The loop is shaped like ImGui's example_glfw_opengl3:
// poll, new frame, build the UI, render, swap (vsync on), sleep while iconified, reverse-order shutdown.
#pragma once
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "display/orientation.hpp"
#include "display/window_presets.hpp"
#include "stream/stream_runtime.hpp"
#include "viewer/viewer_driver.hpp"

namespace radstream::viewer {

// No display, or GLFW/OpenGL 3.3 could not start: the caller falls back to headless.
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct ViewerOptions {
  int width = 1280, height = 960;  // shrunk to the screen when it is smaller (1024 x 768 shows everything)
  // How the image starts (all can be changed with keys and in the Display section): the clinical mode
  // (image-only full screen, key c), the window preset (keys 1 2 3), the tip marker (key t), orientation
  // (keys x transpose, h flip left-right, v flip up-down).
  bool clinical = false;
  display::WindowPreset preset = display::WindowPreset::Auto;
  bool tip_marker = false;
  display::Orientation orientation;
  std::string snapshot_dir = "out/snapshots";  // `s` / the Snapshot button write PNGs here
  std::string
      record_path;  // what `r` records into; empty: out/record/stream-YYYYmmdd-HHMMSS.h5 (never overwritten)
  // Tests and unattended runs act on the viewer through a driver (viewer_driver.hpp), stepped once per pass
  // of the loop; none: the user alone.
  std::shared_ptr<ViewerDriver> driver;
  // Freshness: past this age (seconds since the shown frame's last spoke arrived) the image is dimmed under a
  // red "NO NEW DATA" banner; 0 = automatic, three frame intervals as measured from the stream (>= 0.3 s).
  double stale_after_s = 0;
  // Past this acquired -> on glass latency (ms), or while frames are dropped, the green LIVE marker turns to
  // an amber DELAYED with the latency and the frames dropped in the last 10 s.
  double latency_budget_ms = 200;
  // Polled once per pass: true once the stream has ended and every frame due is made (run --until-close).
  // The window then says STREAM ENDED and stays open until the user closes it.
  std::function<bool()> stream_done;
  // Polled once per displayed frame: true closes the window (Ctrl-C, a run's stop condition).
  std::function<bool()> should_close;
  // Polled while no image has come: what the window says instead of "waiting for spokes..." when not empty
  // (the demo: "preparing the simulated scanner (4 s)").
  std::function<std::string()> waiting_note;
};

class Viewer {
 public:
  Viewer(StreamRuntime& pipeline, const ViewerOptions& opt);  // opens the window; throws Unavailable
  ~Viewer();
  Viewer(const Viewer&) = delete;
  Viewer& operator=(const Viewer&) = delete;
  // Runs until the window is closed (or close_after_s). Returns the number of frames displayed.
  long run();

 private:
  void shutdown() noexcept;  // everything the constructor set up, in reverse order
  struct Impl;
  Impl* impl_;
};

}  // namespace radstream::viewer
