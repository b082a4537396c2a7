// What the viewer draws on the image: the frame line (and in the clinical display its age and latency), the
// freshness state (a green LIVE marker with the frame's latency, or the dimmed image under a red NO NEW DATA
// banner), the orientation labels on the image's edges, the tip marker, the scale bar; and the screenshot
// with its JSON that the tests read back.
#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <imgui.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cfloat>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "viewer/recon_panel_keys.hpp"
#include "viewer/viewer_state.hpp"

namespace radstream::viewer {

void Viewer::Impl::sample_drops(std::int64_t now) {
  if (!shown || (!drops.empty() && now - drops.back().t_ns < 250000000)) return;
  drops.push_back({now, p.metrics().frames.load(), p.metrics().frames_skipped.load()});
  while (now - drops.front().t_ns > 10000000000) drops.pop_front();
}

Viewer::Impl::Freshness Viewer::Impl::freshness() const {
  Freshness f;
  if (!shown) return f;
  const Metrics& m = p.metrics();
  const std::int64_t now = monotonic_ns();
  const std::int64_t since = shown->last_arrival_ns > 0 ? shown->last_arrival_ns : shown->ready_ns;
  f.age_s = double(now - since) * 1e-9;
  // The limit follows the stream's nominal frame interval (its spokes' arrival), never the interval between
  // shown frames: a pipeline that falls behind must not widen its own limit.
  f.limit_s = opt.stale_after_s > 0 ? opt.stale_after_s
                                    : (frame_interval_s > 0 ? std::max(0.3, 3.0 * frame_interval_s) : 1.0);
  if (!drops.empty()) {
    f.dropped_10s = m.frames_skipped.load() - drops.front().skipped;
    f.due_10s = f.dropped_10s + (m.frames.load() - drops.front().made);
  }
  // An old image while spokes still arrive is a pipeline behind (DELAYED); an old image with no spokes
  // arriving, or one past 1 s however busy the pipeline, is no longer live at all (NO NEW DATA).
  const std::int64_t last = m.last_message_ns.load();
  f.arriving = last > 0 && double(now - last) * 1e-9 <= f.limit_s && !m.sender_lost.load() &&
               !m.stream_ended.load() && !stream_done;
  f.stale = f.age_s > f.limit_s && (!f.arriving || f.age_s > std::max(1.0, f.limit_s));
  f.over_budget = shown_glass_ms > opt.latency_budget_ms;
  f.state = frozen                                                        ? LiveState::frozen
            : f.stale                                                     ? LiveState::stale
            : (f.over_budget || f.dropped_10s > 0 || f.age_s > f.limit_s) ? LiveState::delayed
                                                                          : LiveState::live;
  return f;
}

const char* Viewer::Impl::state_name(LiveState s) {
  switch (s) {
    case LiveState::live:
      return "live";
    case LiveState::delayed:
      return "delayed";
    case LiveState::stale:
      return "stale";
    case LiveState::frozen:
      return "frozen";
    default:
      return "waiting";
  }
}

// The marker at the image's top right while the image is fresh: a green LIVE with the frame's acquired -> on
// glass latency, or an amber DELAYED with that latency and the frames dropped in the last 10 s. Hovering it
// shows the legend. Moved a line down when it would run into the frame line.
void Viewer::Impl::draw_live_marker(ImDrawList* dl, ImFont* font, const Rect& r, const Rect& area,
                                    const Freshness& fr, float line_end) {
  const bool delayed = fr.state == LiveState::delayed;
  std::string text =
      shown_glass_ms >= 0 ? fmt::format("LIVE  {:.0f} ms", shown_glass_ms) : std::string("LIVE");
  if (delayed) {
    text = shown_glass_ms >= 0 ? fmt::format("DELAYED {:.0f} ms", shown_glass_ms)
                               : fmt::format("DELAYED - image {:.2f} s old", fr.age_s);
    if (fr.dropped_10s > 0)
      text += fmt::format(" - {} of {} frames dropped (10 s)", fr.dropped_10s, fr.due_10s);
  }
  const float w = std::max(150.f, font->CalcTextSizeA(22.f, FLT_MAX, 0.f, text.c_str()).x + 16.f);
  const float right = std::min(r.x + r.w, area.x + area.w) - 10.f;
  const float x = right - w;
  float y = std::max(r.y, area.y) + 2.f;
  if (x < line_end + 10.f) y += legend ? 62.f : 34.f;
  dl->AddRectFilled(ImVec2(x, y), ImVec2(x + w, y + 30.f),
                    delayed ? IM_COL32(235, 160, 0, 255) : IM_COL32(0, 150, 0, 220));
  dl->AddText(font, 22.f, ImVec2(x + 8.f, y + 4.f),
              delayed ? IM_COL32(0, 0, 0, 255) : IM_COL32(255, 255, 255, 255), text.c_str());
  live_marker[0] = x, live_marker[1] = y, live_marker[2] = w, live_marker[3] = 30.f;
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (m.x >= x && m.x < x + w && m.y >= y && m.y < y + 30.f)
    ImGui::SetTooltip(
        "age: since the newest spoke in the image arrived\nlatency: that spoke's acquisition -> this image "
        "on "
        "screen\nDELAYED: latency over %.0f ms, or frames dropped in the last 10 s (? shows this legend)",
        opt.latency_budget_ms);
}

void Viewer::Impl::overlay(const Rect& area) {
  ImDrawList* dl = ImGui::GetForegroundDrawList();
  ImFont* font = ImGui::GetFont();
  drawn_freshness.reset();
  if (!shown) {
    const std::string note = opt.waiting_note ? opt.waiting_note() : std::string();
    waiting_text = note.empty() ? "waiting for spokes..." : note;
    dl->AddText(font, 22.f, ImVec2(area.x + 20, area.y + 20), IM_COL32(220, 220, 220, 255),
                waiting_text.c_str());
    return;
  }
  const Rect r = view->placement(disp, area);
  const int n = shown->matrix;
  const Freshness fr = freshness();
  drawn_freshness = fr;
  // The frame line; the pixel under the cursor in the image's own coordinates (whatever the orientation).
  const ImVec2 m = ImGui::GetIO().MousePos;
  std::string cursor;
  std::string line = fmt::format(
      "frame {}  spokes {}..{}  W {}{}{}{}", shown->number, shown->first_spoke, shown->last_spoke,
      shown->window, shown->coil >= 0 ? fmt::format("  coil {}", shown->coil) : "",
      shown->iterations >= 0 ? fmt::format("  CG {} it, res {:.2g}", shown->iterations, shown->residual) : "",
      frozen ? "  FROZEN" : "");
  if (clinical)  // the essentials, large: how old the image is and how late it was on glass (and whose)
    line = fmt::format("{}frame {}   age {:.2f} s   latency {}   window {}",
                       others.empty() ? std::string() : main_label() + "   ", shown->number, fr.age_s,
                       shown_glass_ms >= 0 ? fmt::format("{:.0f} ms", shown_glass_ms) : std::string("-"),
                       display::kWindowPresets.name(preset));
  if (m.x >= r.x && m.x < r.x + r.w && m.y >= r.y && m.y < r.y + r.h && !pixels.empty()) {
    const int px = std::clamp(int((m.x - r.x) / r.w * float(n)), 0, n - 1);
    const int py = std::clamp(int((m.y - r.y) / r.h * float(n)), 0, n - 1);
    const display::Pixel src = display::source_of({px, py}, n, orient);
    cursor = fmt::format("(x {}, y {}) = {:.4g}", src.x, src.y, pixels[std::size_t(py) * n + px]);
  }
  if (!cursor.empty())  // the pixel under the cursor, at the bottom left: the top stays for the markers
    dl->AddText(ImVec2(area.x + 10, area.y + area.h - 64), IM_COL32(255, 255, 0, 255), cursor.c_str());
  const float line_size = clinical ? 24.f : font->FontSize;
  dl->AddText(font, line_size, ImVec2(area.x + 10, area.y + 8), IM_COL32(255, 255, 0, 255), line.c_str());
  const float line_end = area.x + 10.f + font->CalcTextSizeA(line_size, FLT_MAX, 0.f, line.c_str()).x;
  if (legend) {  // key ?: what the two numbers mean, and when the marker changes
    const std::string l = fmt::format(
        "age: since the newest spoke in the image arrived (NO NEW DATA past {:.2f} s)   latency: that "
        "spoke's "
        "acquisition -> this image on screen (DELAYED past {:.0f} ms, or when frames are dropped)",
        fr.limit_s, opt.latency_budget_ms);
    const ImVec2 ls = font->CalcTextSizeA(18.f, FLT_MAX, 0.f, l.c_str());
    dl->AddRectFilled(ImVec2(area.x + 6.f, area.y + 36.f), ImVec2(area.x + 14.f + ls.x, area.y + 40.f + ls.y),
                      IM_COL32(0, 0, 0, 190));
    dl->AddText(font, 18.f, ImVec2(area.x + 10.f, area.y + 38.f), IM_COL32(230, 230, 230, 255), l.c_str());
  }
  // Freshness, on the image itself: LIVE with the frame's latency, or dimmed under a red banner with its age.
  if (fr.stale || frozen) {
    const bool lost = p.metrics().sender_lost.load(), ended = p.metrics().stream_ended.load();
    if (!frozen) {  // dimmed, inside a red border around the whole image area (seen from across the room)
      dl->AddRectFilled(ImVec2(r.x, r.y), ImVec2(r.x + r.w, r.y + r.h), IM_COL32(0, 0, 0, 170));
      dl->AddRect(ImVec2(area.x + 3.f, area.y + 3.f), ImVec2(area.x + area.w - 3.f, area.y + area.h - 3.f),
                  IM_COL32(220, 0, 0, 255), 0.f, 0, 6.f);
    }
    const std::string banner =
        frozen ? fmt::format("FROZEN - image {:.1f} s old", fr.age_s)
        : fr.arriving
            ? fmt::format("NO NEW IMAGE - image {:.1f} s old - RECONSTRUCTION BEHIND", fr.age_s)
            : fmt::format("NO NEW DATA - image {:.1f} s old{}", fr.age_s,
                          lost ? " - SENDER LOST" : (ended || stream_done ? " - STREAM ENDED" : ""));
    const float by = r.y + r.h * 0.45f;
    dl->AddRectFilled(ImVec2(r.x, by), ImVec2(r.x + r.w, by + 44.f),
                      frozen ? IM_COL32(170, 120, 0, 230) : IM_COL32(200, 0, 0, 235));
    dl->AddText(font, 28.f, ImVec2(r.x + 16.f, by + 8.f), IM_COL32(255, 255, 255, 255), banner.c_str());
  } else {
    draw_live_marker(dl, font, r, area, fr, line_end);
  }
  // The tip marker: a ring around the brightest small blob inside the object, or, when nothing stands out
  // enough to be a tip, a line saying so where the ring would draw the eye.
  // Only on a live image: a ring at the tip's last position on a stale or frozen image would look like a live
  // position (the banner says the image is old; the ring must not say otherwise).
  tip_text[0] = tip_text[1] = tip_text[2] = tip_text[3] = 0.f;
  const bool not_live = fr.stale || frozen;
  if (not_live) live_marker[0] = live_marker[1] = live_marker[2] = live_marker[3] = 0.f;
  tip_ringed = tip_marker && tip.found && !not_live;
  tip_hidden_not_live = tip_marker && tip.found && not_live;
  if (tip_hidden_not_live) {
    // nothing at the old position; the banner already says why the image is not live
  } else if (tip_ringed) {
    const float cx = r.x + (tip.x + 0.5f) / float(n) * r.w, cy = r.y + (tip.y + 0.5f) / float(n) * r.h;
    const float rad = std::max(12.f, r.w * 0.035f);
    dl->AddCircle(ImVec2(cx, cy), rad, IM_COL32(0, 230, 255, 255), 32, 2.5f);
    dl->AddText(font, 18.f, ImVec2(cx + rad + 4.f, cy - 9.f), IM_COL32(0, 230, 255, 255), "tip");
  } else if (tip_marker && !not_live) {
    const char* t = "tip: not found";
    const ImVec2 ts = font->CalcTextSizeA(22.f, FLT_MAX, 0.f, t);
    const float x = std::max(r.x, area.x) + 10.f, y = area.y + (legend ? 66.f : 40.f);
    dl->AddRectFilled(ImVec2(x - 4.f, y - 2.f), ImVec2(x + ts.x + 4.f, y + ts.y + 2.f),
                      IM_COL32(0, 0, 0, 200));
    dl->AddText(font, 22.f, ImVec2(x, y), IM_COL32(0, 230, 255, 255), t);
    tip_text[0] = x - 4.f, tip_text[1] = y - 2.f, tip_text[2] = ts.x + 8.f, tip_text[3] = ts.y + 4.f;
  }
  if (!message.empty())
    dl->AddText(ImVec2(area.x + 10, area.y + area.h - 24), IM_COL32(200, 200, 255, 255), message.c_str());
  // Orientation: the axis that points to each edge of the image (README "Orientation"), and the line.
  const display::EdgeLabels e = display::edge_labels(orient);
  const float cx = std::clamp(r.x + 0.5f * r.w, area.x + 20.f, area.x + area.w - 20.f);
  const float cy = std::clamp(r.y + 0.5f * r.h, area.y + 40.f, area.y + area.h - 60.f);
  const float big = 22.f;
  const auto label = [&](float x, float y, const std::string& t) {  // on a dark box: readable on white too
    dl->AddRectFilled(ImVec2(x - 3.f, y - 1.f), ImVec2(x + 29.f, y + big + 1.f), IM_COL32(0, 0, 0, 160));
    dl->AddText(font, big, ImVec2(x, y), IM_COL32(255, 255, 255, 255), t.c_str());
  };
  label(std::min(r.x + r.w, area.x + area.w) - 36.f, cy - 11.f, e.right);
  label(std::max(r.x, area.x) + 6.f, cy - 11.f, e.left);
  label(cx - 13.f, std::max(std::max(r.y, area.y) + 40.f, live_marker[1] + live_marker[3] + 6.f), e.top);
  label(cx - 13.f, std::min(r.y + r.h, area.y + area.h) - 30.f, e.bottom);
  dl->AddText(ImVec2(area.x + 10, area.y + area.h - 44), IM_COL32(180, 180, 180, 255),
              (display::describe(orient) + (legend ? "" : "   ? legend")).c_str());
  // While recording: a red REC on the image (nothing is written that the user does not see).
  rec_marker[0] = rec_marker[1] = rec_marker[2] = rec_marker[3] = 0.f;
  if (!p.recording().empty()) {
    const float x = std::min(r.x + r.w, area.x + area.w) - 80.f, y = area.y + area.h - 84.f;
    dl->AddRectFilled(ImVec2(x, y), ImVec2(x + 70.f, y + 30.f), IM_COL32(210, 0, 0, 255));
    dl->AddCircleFilled(ImVec2(x + 14.f, y + 15.f), 6.f, IM_COL32(255, 255, 255, 255));
    dl->AddText(font, 22.f, ImVec2(x + 26.f, y + 4.f), IM_COL32(255, 255, 255, 255), "REC");
    rec_marker[0] = x, rec_marker[1] = y, rec_marker[2] = 70.f, rec_marker[3] = 30.f;
  }
  // Scale bar from the field of view: a round length near a fifth of the image.
  const double fov = p.stream_header().fov_mm;
  const double mm_per_px = fov / r.w;
  double bar_mm = 1;
  for (double c : {1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0})
    if (c / mm_per_px <= r.w * 0.25) bar_mm = c;
  const float len = float(bar_mm / mm_per_px);
  const float bx = area.x + area.w - len - 20.f, by = area.y + area.h - 20.f;
  dl->AddLine(ImVec2(bx, by), ImVec2(bx + len, by), IM_COL32(255, 255, 255, 255), 3.f);
  dl->AddText(ImVec2(bx, by - 18), IM_COL32(255, 255, 255, 255), fmt::format("{:g} mm", bar_mm).c_str());
}

void Viewer::Impl::write_screenshot(const std::string& shot, int fb_w, int fb_h, const Rect& area) {
  std::vector<unsigned char> rgb(std::size_t(fb_w) * fb_h * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, fb_w, fb_h, GL_RGB, GL_UNSIGNED_BYTE, rgb.data());
  std::vector<unsigned char> flipped(rgb.size());
  for (int y = 0; y < fb_h; ++y)
    std::copy_n(rgb.data() + std::size_t(fb_h - 1 - y) * fb_w * 3, std::size_t(fb_w) * 3,
                flipped.data() + std::size_t(y) * fb_w * 3);
  const std::filesystem::path path(shot);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  if (!stbi_write_png(path.c_str(), fb_w, fb_h, 3, flipped.data(), fb_w * 3))
    log::error("viewer: cannot write {}", path.string());
  const Rect r = view->placement(disp, area);
  const Freshness fr = drawn_freshness ? *drawn_freshness : freshness();
  const display::EdgeLabels e = display::edge_labels(orient);
  nlohmann::ordered_json j = {
      {"frame", shown ? shown->number : 0},
      {"first_spoke", shown ? shown->first_spoke : 0},
      {"last_spoke", shown ? shown->last_spoke : 0},
      {"window", shown ? shown->window : 0},
      {"matrix", shown ? shown->matrix : 0},
      {"image_rect", {r.x, r.y, r.w, r.h}},
      {"panel_x", area.x + area.w},
      {"low", disp.low},
      {"high", disp.high},
      {"gamma", disp.gamma},
      {"colormap", disp.colormap},
      {"fb", {fb_w, fb_h}},
      {"pipeline_window", p.window()},
      {"backend", to_string(p.backend())},
      {"message", message},
      {"stale", fr.stale},
      {"age_s", fr.age_s},
      {"stale_after_s", fr.limit_s},
      {"live_state", state_name(fr.state)},
      {"frames_skipped", fr.dropped_10s},
      {"frames_due", fr.due_10s},
      {"latency_budget_ms", opt.latency_budget_ms},
      {"live_marker_rect", {live_marker[0], live_marker[1], live_marker[2], live_marker[3]}},
      {"legend_shown", legend},
      {"recon_keys", panel_keys(ui_recon, p.backend())},
      {"recording", !p.recording().empty()},
      {"rec_marker_rect", {rec_marker[0], rec_marker[1], rec_marker[2], rec_marker[3]}},
      {"clinical", clinical},
      {"panels_shown", !clinical},
      {"panel_scroll_max", panel_scroll_max},
      {"preset", display::kWindowPresets.name(preset)},
      {"orientation", display::describe(orient)},
      {"edge_labels", {{"right", e.right}, {"left", e.left}, {"bottom", e.bottom}, {"top", e.top}}},
      {"tip",
       {{"shown", tip_ringed},
        {"hidden_not_live", tip_hidden_not_live},
        {"x", tip.x},
        {"y", tip.y},
        {"contrast", tip.contrast},
        {"threshold", tip.threshold},
        {"not_found_rect", {tip_text[0], tip_text[1], tip_text[2], tip_text[3]}}}},
      {"shown_glass_ms", shown_glass_ms},
      {"waiting", shown ? std::string() : waiting_text},
      {"main_label", main_label()}};
  // The columns beside the main view: the other slices and the MRD sessions.
  j["columns"] = nlohmann::ordered_json::array();
  for (const auto& v : others)
    j["columns"].push_back({{"label", v.session.empty() ? fmt::format("slice {}", v.slice) : v.label},
                            {"session", v.session},
                            {"frame", v.shown ? v.shown->number : 0}});
  std::ofstream out(path.string() + ".json");
  if (!(out << j.dump() << "\n")) log::error("viewer: cannot write {}.json", path.string());
  log::info("viewer: screenshot {} (frame {})", path.string(), shown ? shown->number : 0);
}

}  // namespace radstream::viewer
