// The display's starting state on the command line of `demo` and `run` (the viewer's keys change it later):
// --clinical, --preset, --tip-marker, --transpose, --flip-x, --flip-y, declared once here.
#pragma once
#include "core/enum_table.hpp"
#include "display/orientation.hpp"
#include "display/window_presets.hpp"

namespace radstream::app {

struct DisplayChoice {
  bool clinical = false, tip_marker = false;
  display::WindowPreset preset = display::WindowPreset::Auto;
  display::Orientation orientation;

  template <class V>
  void visit(V& v) {
    v.field("clinical", clinical,
            "viewer: start in the clinical display (image only, full screen; key c toggles it)");
    v.choice("preset", preset, display::kWindowPresets,
             "viewer: window preset; object ignores a bright rim (keys 1 2 3)");
    v.field("tip_marker", tip_marker, "viewer: mark the brightest small blob, e.g. a catheter tip (key t)");
    v.field("transpose", orientation.transpose, "viewer: show the image transposed (key x)");
    v.field("flip_x", orientation.flip_x, "viewer: mirror the image left-right (key h)");
    v.field("flip_y", orientation.flip_y, "viewer: mirror the image up-down (key v)");
  }
};

}  // namespace radstream::app
