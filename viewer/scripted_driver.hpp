// The driver of the viewer's scripted options (--screenshot, --screenshots, --set-window, --apply-backend,
// --close-after-s) of `demo` and `run`: each action at its time.
#pragma once
#include <string>

#include "viewer/viewer_driver.hpp"

namespace radstream::viewer {

struct ViewerScript {
  // PNG (and JSON beside it) after screenshot_after_s, once a frame is shown; with screenshots > 1, that
  // many, screenshot_every_s apart, named NAME_0.png, NAME_1.png, ...
  std::string screenshot;
  double screenshot_after_s = 3.0;
  int screenshots = 1;
  double screenshot_every_s = 0.4;
  int set_window = 0;         // > 0: the window slider moved to this value at 1 s
  std::string apply_backend;  // non-empty: this backend chosen and Apply pressed at 1.5 s
  double close_after_s = 0;   // > 0: the window closed at this time (once the screenshots are taken)

  bool empty() const {
    return screenshot.empty() && set_window <= 0 && apply_backend.empty() && close_after_s <= 0;
  }
};

class ScriptedDriver : public ViewerDriver {
 public:
  explicit ScriptedDriver(ViewerScript script) : s_(std::move(script)) {}
  void step(double t, ViewerControls& controls) override;

 private:
  static constexpr double kScreenshotGraceS = 30.0;
  void close_when_done(double t, ViewerControls& c);

  ViewerScript s_;
  bool window_set_ = false, backend_applied_ = false, close_delay_said_ = false;
  int screenshots_taken_ = 0;
  double next_screenshot_s_ = -1;
};

}  // namespace radstream::viewer
