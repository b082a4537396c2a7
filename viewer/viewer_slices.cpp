// The other slices of a multi-slice stream, and each MRD session that has made a frame, side by side with
// slice 0 (which keeps the main view, its controls and overlays): each in its own column with its own image
// view, the same orientation, and either slice 0's window/level and zoom (sync_slices, the default) or its
// own preset window. Each column says which slice or session it is (the session's client and config), its
// frame and how old it is; a column whose image is older than slice 0's staleness limit says STALE in red, so
// a stopped slice never passes for live, and a session's column goes when the session ends.
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <iterator>

#include "display/orientation.hpp"
#include "viewer/viewer_state.hpp"

namespace radstream::viewer {

Rect Viewer::Impl::slice_column(const Rect& area, int k) const {
  const int n = 1 + int(others.size());
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

std::string Viewer::Impl::main_label() const {
  if (shown && shown->depth > 1)
    return mip ? "axial MIP" : fmt::format("axial, z = {} of {}", cursor.z, shown->depth);
  return p.slices() > 1 ? "slice 0" : "ZeroMQ stream";
}

void Viewer::Impl::sync_session_views() {
  const auto sessions = p.session_frames();
  std::erase_if(others, [&](const SliceView& v) {
    return !v.session.empty() && std::none_of(sessions.begin(), sessions.end(),
                                              [&](const auto& e) { return e.session == v.session; });
  });
  for (const auto& e : sessions) {
    auto it = std::find_if(others.begin(), others.end(),
                           [&](const SliceView& v) { return v.session == e.session; });
    if (it == others.end()) {
      SliceView v;
      v.session = e.session;
      v.label = e.session;
      v.view = std::make_unique<ImageView>();
      others.push_back(std::move(v));
      it = std::prev(others.end());
    }
    it->offered = e.frame;
  }
}

void Viewer::Impl::update_slices() {
  sync_session_views();
  for (auto& v : others) {
    if (!frozen && v.plane == 0) {  // a volume's planes come with the main view's frame
      auto f = v.session.empty() ? p.latest(v.slice) : v.offered;
      if (f && f != v.shown) {
        if (!v.session.empty())  // "mrd: session 3 (127.0.0.1): gridding": its line's head
          for (const std::string& line : p.session_lines())
            if (line.find(v.session + " (") != std::string::npos) v.label = line.substr(0, line.find(','));
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
  int column = 0;
  for (auto& v : others) {
    ++column;
    if (!v.shown) continue;
    Display d = disp;  // slice 0's colour map, gamma, zoom and pan
    if (!sync_slices) {
      d.low = v.disp.low;
      d.high = v.disp.high;
    }
    const Rect c = slice_column(area, column);
    v.view->draw(d, Rect{c.x * sx, c.y * sy, c.w * sx, c.h * sy}, fb_w, fb_h);
  }
}

void Viewer::Impl::overlay_slices(const Rect& area) {
  if (others.empty()) return;
  ImDrawList* dl = ImGui::GetForegroundDrawList();
  ImFont* font = ImGui::GetFont();
  const Freshness f0 = freshness();
  const double limit = f0.limit_s > 0 ? f0.limit_s : 1.0;
  dl->AddText(font, 18.f, ImVec2(area.x + 8, area.y + area.h - 26), IM_COL32(230, 230, 120, 255),
              main_label().c_str());
  int column = 0;
  for (const auto& v : others) {
    const Rect c = slice_column(area, ++column);
    dl->AddLine(ImVec2(c.x, c.y), ImVec2(c.x, c.y + c.h), IM_COL32(90, 90, 90, 255));
    std::string label = v.session.empty() && v.plane == 0 ? fmt::format("slice {}", v.slice) : v.label;
    if (v.plane > 0 && mip) label += ", MIP";
    bool stale = true;
    if (v.shown) {
      const std::int64_t since = v.shown->last_arrival_ns > 0 ? v.shown->last_arrival_ns : v.shown->ready_ns;
      const double age = double(monotonic_ns() - since) * 1e-9;
      stale = age > limit;
      label += fmt::format("\n  frame {}  {:.1f} s old", v.shown->number, age);
    } else {
      label += "\n  no frame yet";
    }
    const std::string err = v.session.empty() ? p.last_error(v.slice) : std::string();
    dl->AddText(font, 18.f, ImVec2(c.x + 8, c.y + 8), IM_COL32(230, 230, 120, 255), label.c_str());
    // A volume's plane through the tip rings it as the main view does (only while live: tip_ringed).
    if (v.plane > 0 && v.shown && cursor_on_tip && tip_ringed && !mip) {
      const int n = v.shown->matrix;
      const display::Pixel raw{v.plane == 1 ? cursor.x : cursor.y,
                               display::stretched_row(cursor.z, n, v.shown->depth)};
      const display::Pixel at = display::screen_of(raw, n, orient);
      const Rect r = v.view->placement(disp, c);
      const float cx = r.x + (float(at.x) + 0.5f) / float(n) * r.w,
                  cy = r.y + (float(at.y) + 0.5f) / float(n) * r.h;
      const float rad = std::max(12.f, r.w * 0.035f);
      dl->AddCircle(ImVec2(cx, cy), rad, IM_COL32(0, 230, 255, 255), 32, 2.5f);
      dl->AddText(font, 18.f, ImVec2(cx + rad + 4.f, cy - 9.f), IM_COL32(0, 230, 255, 255), "tip");
    }
    if (stale)
      dl->AddText(font, 26.f, ImVec2(c.x + 8, c.y + 52), IM_COL32(255, 60, 60, 255),
                  err.empty() ? "STALE" : ("STALE: " + err).c_str());
  }
}

}  // namespace radstream::viewer
