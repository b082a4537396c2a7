#include "viewer/scripted_driver.hpp"

#include "core/log.hpp"

namespace radstream::viewer {

void ScriptedDriver::step(double t, ViewerControls& c) {
  if (s_.set_window > 0 && !window_set_ && t >= 1.0) {
    window_set_ = true;
    c.move_window_slider(s_.set_window);
  }
  if (!s_.apply_backend.empty() && !backend_applied_ && t >= 1.5) {
    backend_applied_ = true;
    const std::string message = c.apply_backend(s_.apply_backend);
    log::info("viewer: apply backend {}: {}", s_.apply_backend, message);
  }
  if (!s_.screenshot.empty() && !screenshot_requested_ && t >= s_.screenshot_after_s && c.frame_shown()) {
    screenshot_requested_ = true;
    c.request_screenshot(s_.screenshot);
  }
  if (s_.close_after_s > 0 && t >= s_.close_after_s) c.close();
}

}  // namespace radstream::viewer
