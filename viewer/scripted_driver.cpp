#include "viewer/scripted_driver.hpp"

#include <algorithm>
#include <filesystem>

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
  if (!s_.screenshot.empty() && screenshots_taken_ < s_.screenshots && c.frame_shown() &&
      t >= std::max(s_.screenshot_after_s, next_screenshot_s_)) {
    std::string path = s_.screenshot;
    if (s_.screenshots > 1) {
      const std::filesystem::path f(s_.screenshot);
      path = (f.parent_path() / (f.stem().string() + "_" + std::to_string(screenshots_taken_) +
                                 (f.has_extension() ? f.extension().string() : std::string(".png"))))
                 .string();
    }
    ++screenshots_taken_;
    next_screenshot_s_ = t + s_.screenshot_every_s;
    c.request_screenshot(path);
  }
  if (s_.close_after_s > 0 && t >= s_.close_after_s) c.close();
}

}  // namespace radstream::viewer
