// The display's starting state on the command line of `demo` and `run` (the viewer's keys change it later):
// --clinical, --preset, --tip-marker, --transpose, --flip-x, --flip-y.
#pragma once
#include <CLI/CLI.hpp>

#include "app/enum_option.hpp"
#include "display/orientation.hpp"
#include "display/window_presets.hpp"

namespace radstream::app {

struct DisplayChoice {
  bool clinical = false, tip_marker = false;
  display::WindowPreset preset = display::WindowPreset::Auto;
  display::Orientation orientation;
};

inline void add_display_options(CLI::App& app, DisplayChoice& d) {
  app.add_flag("--clinical", d.clinical,
               "viewer: start in the clinical display (image only, full screen; key c toggles it)");
  add_enum_option(app, "--preset", d.preset, display::kWindowPresets,
                  "viewer: window preset; object ignores a bright rim (keys 1 2 3)");
  app.add_flag("--tip-marker", d.tip_marker, "viewer: mark the brightest small blob, e.g. a catheter tip (key t)");
  app.add_flag("--transpose", d.orientation.transpose, "viewer: show the image transposed (key x)");
  app.add_flag("--flip-x", d.orientation.flip_x, "viewer: mirror the image left-right (key h)");
  app.add_flag("--flip-y", d.orientation.flip_y, "viewer: mirror the image up-down (key v)");
}

}  // namespace radstream::app
