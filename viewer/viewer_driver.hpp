// A driver acts on the viewer from outside its loop, through the same code paths as the user's controls:
// tests and unattended runs (a screenshot at a given time, a slider moved, a setting applied, the window
// closed) script the viewer this way, so its loop holds no test actions of its own.
#pragma once
#include <string>

namespace radstream::viewer {

// What a driver may do, each as the user would do it.
class ViewerControls {
 public:
  virtual ~ViewerControls() = default;
  // Moves the window slider (spokes per frame) to `window`.
  virtual void move_window_slider(int window) = 0;
  // Chooses `backend` in the reconstruction panel and presses Apply; returns the panel's message (the
  // reason when the setting is refused).
  virtual std::string apply_backend(const std::string& backend) = 0;
  // Whether a frame has been shown yet.
  virtual bool frame_shown() const = 0;
  // Writes the framebuffer of this pass, once rendered, to `path` (PNG) with a JSON beside it.
  virtual void request_screenshot(const std::string& path) = 0;
  // Closes the window as the user would.
  virtual void close() = 0;
};

// Called once per pass of the loop, before the UI is built, with the seconds since the window opened.
class ViewerDriver {
 public:
  virtual ~ViewerDriver() = default;
  virtual void step(double t, ViewerControls& controls) = 0;
};

}  // namespace radstream::viewer
