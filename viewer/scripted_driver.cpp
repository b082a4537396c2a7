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
  if (s_.close_after_s > 0 && t >= s_.close_after_s) close_when_done(t, c);
}

// A run that asked for N screenshots gets N: on a loaded machine (a software OpenGL renderer sharing two
// cores with other work) the frames, and so the screenshots, come slower than the script assumed; the window
// then stays open for the missing ones, at most kScreenshotGraceS past the asked-for close, and says so once.
void ScriptedDriver::close_when_done(double t, ViewerControls& c) {
  const int missing = s_.screenshot.empty() ? 0 : s_.screenshots - screenshots_taken_;
  if (missing <= 0 || t >= s_.close_after_s + kScreenshotGraceS) {
    if (missing > 0)
      log::warn("viewer: closing at {:.1f} s with {} of {} screenshots not taken (no frame shown in time)", t,
                missing, s_.screenshots);
    c.close();
    return;
  }
  if (!close_delay_said_) {
    close_delay_said_ = true;
    log::info(
        "viewer: close at {:.1f} s delayed until the {} screenshots still due are taken (at most {:.0f} s)",
        s_.close_after_s, missing, kScreenshotGraceS);
  }
}

}  // namespace radstream::viewer
