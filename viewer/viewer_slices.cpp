// The other slices of a multi-slice stream, side by side with slice 0 (which keeps the main view, its
// controls and overlays): each in its own column with its own image view, the same orientation, and either
// slice 0's window/level and zoom (sync_slices, the default) or its own preset window. Each column says
// which slice it is, its frame and how old it is; a slice whose image is older than slice 0's staleness
// limit says STALE in red, so a stopped slice never passes for live.
#include <fmt/format.h>
#include <imgui.h>

#include "viewer/viewer_state.hpp"

namespace radstream::viewer {

Rect Viewer::Impl::slice_column(const Rect& area, int k) const {
  const int n = std::max(1, p.slices());
  const float w = area.w / float(n);
  return Rect{area.x + w * float(k), area.y, w, area.h};
}

void Viewer::Impl::make_slice_views() {
  for (int k = 1; k < p.slices(); ++k) {
    SliceView v;
    v.slice = k;
    v.view = std::make_unique<ImageView>();
    others.push_back(std::move(v));
  }
}

void Viewer::Impl::update_slices() {
  for (auto& v : others) {
    if (!frozen) {
      auto f = p.latest(v.slice);
      if (f && f != v.shown) {
        v.shown = f;
        v.raw.resize(f->image.size());
        for (std::size_t i = 0; i < v.raw.size(); ++i) v.raw[i] = f->image[i].real();
        v.dirty = true;
      }
    }
    if (v.dirty && v.shown) {
      display::orient(v.raw, v.shown->matrix, orient, v.pixels);
      v.view->upload(v.pixels, v.shown->matrix);
      const display::WindowLevel w = display::preset_window(v.pixels, v.shown->matrix, preset);
      v.disp.low = w.low;
      v.disp.high = w.high;
      v.dirty = false;
    }
  }
}

void Viewer::Impl::draw_slices(const Rect& area, float sx, float sy, int fb_w, int fb_h) {
  for (auto& v : others) {
    if (!v.shown) continue;
    Display d = disp;  // slice 0's colour map, gamma, zoom and pan
    if (!sync_slices) {
      d.low = v.disp.low;
      d.high = v.disp.high;
    }
    const Rect c = slice_column(area, v.slice);
    v.view->draw(d, Rect{c.x * sx, c.y * sy, c.w * sx, c.h * sy}, fb_w, fb_h);
  }
}

void Viewer::Impl::overlay_slices(const Rect& area) {
  if (p.slices() < 2) return;
  ImDrawList* dl = ImGui::GetForegroundDrawList();
  ImFont* font = ImGui::GetFont();
  const Freshness f0 = freshness();
  const double limit = f0.limit_s > 0 ? f0.limit_s : 1.0;
  dl->AddText(font, 18.f, ImVec2(area.x + 8, area.y + area.h - 26), IM_COL32(230, 230, 120, 255), "slice 0");
  for (const auto& v : others) {
    const Rect c = slice_column(area, v.slice);
    dl->AddLine(ImVec2(c.x, c.y), ImVec2(c.x, c.y + c.h), IM_COL32(90, 90, 90, 255));
    std::string label = fmt::format("slice {}", v.slice);
    bool stale = true;
    if (v.shown) {
      const std::int64_t since = v.shown->last_arrival_ns > 0 ? v.shown->last_arrival_ns : v.shown->ready_ns;
      const double age = double(monotonic_ns() - since) * 1e-9;
      stale = age > limit;
      label += fmt::format("  frame {}  {:.1f} s old", v.shown->number, age);
    } else {
      label += "  no frame yet";
    }
    const std::string err = p.last_error(v.slice);
    dl->AddText(font, 18.f, ImVec2(c.x + 8, c.y + 8), IM_COL32(230, 230, 120, 255), label.c_str());
    if (stale)
      dl->AddText(font, 26.f, ImVec2(c.x + 8, c.y + 32), IM_COL32(255, 60, 60, 255),
                  err.empty() ? "STALE" : ("STALE: " + err).c_str());
  }
}

}  // namespace radstream::viewer
