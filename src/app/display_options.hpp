// The display's starting state on the command line of `demo` and `run` (the viewer's keys change it later):
// --clinical, --preset, --tip-marker, --latency-budget-ms, --transpose, --flip-x, --flip-y, declared once
// here; and the scripted screenshots and close of unattended runs.
#pragma once
#include <string>

#include "core/enum_table.hpp"
#include "display/orientation.hpp"
#include "display/window_presets.hpp"
#ifdef RADSTREAM_HAVE_VIEWER
#include "viewer/scripted_driver.hpp"
#endif

namespace radstream::app {

struct DisplayChoice {
  bool clinical = false, tip_marker = false;
  double latency_budget_ms = 200;
  display::WindowPreset preset = display::WindowPreset::Auto;
  display::Orientation orientation;

  template <class V>
  void visit(V& v) {
    v.field("clinical", clinical,
            "viewer: start in the clinical display (image only, full screen; key c toggles it)");
    v.choice("preset", preset, display::kWindowPresets,
             "viewer: window preset; object ignores a bright rim (keys 1 2 3)");
    v.field("tip_marker", tip_marker, "viewer: mark the brightest small blob, e.g. a catheter tip (key t)");
    v.field("latency_budget_ms", latency_budget_ms, 1.0, 1e6,
            "viewer: past this acquired -> on glass latency, or while frames are dropped, LIVE turns to an "
            "amber DELAYED");
    v.field("transpose", orientation.transpose, "viewer: show the image transposed (key x)");
    v.field("flip_x", orientation.flip_x, "viewer: mirror the image left-right (key h)");
    v.field("flip_y", orientation.flip_y, "viewer: mirror the image up-down (key v)");
  }
};

// What an unattended run (and a test) has the viewer do at given times, declared once for `demo` and `run`.
struct ViewerScriptChoice {
  std::string screenshot;
  double screenshot_after_s = 3.0, screenshot_every_s = 0.4, close_after_s = 0;
  int screenshots = 1;

  template <class V>
  void visit(V& v) {
    v.field("screenshot", screenshot, "viewer: save the window as this PNG (with a .json beside it)");
    v.field("screenshot_after", screenshot_after_s, 0.0, 3600.0, "viewer: seconds before the screenshot");
    v.field("screenshots", screenshots, 1, 10000,
            "viewer: take this many screenshots (NAME_0.png, NAME_1.png, ...), --screenshot-every-s apart");
    v.field("screenshot_every", screenshot_every_s, 0.01, 3600.0, "viewer: seconds between screenshots");
    v.field("close_after", close_after_s, 0.0, 1e9,
            "viewer: close the window after this many seconds, once the screenshots asked for are taken "
            "(0: never)");
  }
};

#ifdef RADSTREAM_HAVE_VIEWER
inline viewer::ViewerScript viewer_script(const ViewerScriptChoice& c) {
  viewer::ViewerScript s;
  s.screenshot = c.screenshot;
  s.screenshot_after_s = c.screenshot_after_s;
  s.screenshots = c.screenshots;
  s.screenshot_every_s = c.screenshot_every_s;
  s.close_after_s = c.close_after_s;
  return s;
}
#endif

}  // namespace radstream::app
