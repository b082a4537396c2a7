// The viewer's side panel: one column beside the image with the stream's state, the reconstruction controls,
// the display controls and the performance plots, each a section that can be folded; the column scrolls
// inside itself when the window is small (1024 x 768 shows everything).
#include <fmt/format.h>
#include <imgui.h>

#include <algorithm>
#include <cfloat>

#include "recon/registry.hpp"
#include "viewer/param_widgets.hpp"
#include "viewer/recon_panel_keys.hpp"
#include "viewer/viewer_state.hpp"

namespace radstream::viewer {
namespace {

const char* kMaps[] = {"grey", "hot"};

void stream_section(StreamRuntime& p) {
  Metrics& m = p.metrics();
  const std::int64_t last = m.last_message_ns.load();
  const double age = last ? double(monotonic_ns() - last) * 1e-9 : -1.0;
  const bool connected = last && !m.sender_lost.load();
  ImGui::Text("%s  %s", p.endpoint().c_str(),
              m.stream_ended.load() ? "stream ended"
                                    : (connected ? "connected" : (last ? "SENDER LOST" : "waiting")));
  ImGui::Text("spokes %llu   frames %llu   skipped %llu", (unsigned long long)m.spokes.load(),
              (unsigned long long)m.frames.load(), (unsigned long long)m.frames_skipped.load());
  ImGui::Text("last message %s ago", age < 0 ? "-" : fmt::format("{:.2f} s", age).c_str());
  ImGui::Text("missing %llu in %llu gaps", (unsigned long long)m.missing.load(),
              (unsigned long long)m.gaps.load());
  std::string bad;
  for (int r = 0; r < wire::kRejectCount; ++r)
    if (m.rejected[r]) bad += fmt::format("{} {}  ", wire::to_string(wire::Reject(r)), m.rejected[r].load());
  ImGui::TextWrapped("bad messages: %s", bad.empty() ? "none" : bad.c_str());
  if (const std::string mrd = p.endpoint_of("mrd"); !mrd.empty()) {  // the scanner port and its sessions
    const auto sessions = p.session_lines();
    ImGui::Separator();
    ImGui::Text(
        "MRD %s  %s", mrd.c_str(),
        sessions.empty() ? "waiting for a client" : fmt::format("{} session(s)", sessions.size()).c_str());
    for (const auto& line : sessions) ImGui::TextWrapped("%s", line.c_str());
  }
}

}  // namespace

void Viewer::Impl::panels(const Rect& area) {
  ImGui::SetNextWindowPos(ImVec2(area.x + area.w, 0.f));
  ImGui::SetNextWindowSize(ImVec2(kPanelWidth, area.h));
  ImGui::Begin("radstream", nullptr,
               ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse |
                   ImGuiWindowFlags_NoTitleBar);
  const float plot_w = kPanelWidth - 40.f;
  if (ImGui::CollapsingHeader("Stream", ImGuiTreeNodeFlags_DefaultOpen)) stream_section(p);
  // Reconstruction controls: applied between frames, no restart.
  if (ImGui::CollapsingHeader("Reconstruction", ImGuiTreeNodeFlags_DefaultOpen)) {
    ImGui::Text("now: %s on %s", to_string(p.recon().method).c_str(), to_string(p.backend()).c_str());
    if (ImGui::SliderInt("window W", &ui_window, 8, 1024) && ui_window > 0) {
      try {
        p.set_window(ui_window);
      } catch (const std::exception& e) {
        message = e.what();
        ui_window = p.window();
      }
    }
    if (ImGui::SliderInt("stride S", &ui_stride, 1, 256)) p.set_stride(std::max(1, ui_stride));
    ParamWidgets widgets;  // the reconstruction keys, from ReconParams::visit()
    ImGui::PushItemWidth(150.f);
    // only the keys of this method and backend
    visit_panel_keys(ui_recon, p.backend(), widgets, p.registry().methods());
    ImGui::PopItemWidth();
    if (ImGui::Button("Apply")) apply_recon();
    ImGui::SameLine();
    ImGui::TextDisabled("(takes effect at the next frame)");
    if (ImGui::SliderInt("coil view", &ui_coil, -1, std::max(0, p.stream_header().coils - 1),
                         ui_coil < 0 ? "combined" : "coil %d"))
      p.set_coil_view(ui_coil);
    if (!p.last_error().empty()) ImGui::TextWrapped("last error: %s", p.last_error().c_str());
  }
  if (ImGui::CollapsingHeader("Display", ImGuiTreeNodeFlags_DefaultOpen)) {
    if (ImGui::Button("Clinical display (c)")) toggle_clinical();
    ImGui::SameLine();
    if (ImGui::Button("Fullscreen (f)")) toggle_fullscreen();
    int pi = int(display::kWindowPresets.index(preset));
    const char* names[] = {display::kWindowPresets.items[0].name, display::kWindowPresets.items[1].name,
                           display::kWindowPresets.items[2].name};
    bool redo = false;
    if (ImGui::Combo("preset (1 2 3)", &pi, names, 3)) {
      preset = display::kWindowPresets.items[std::size_t(pi)].value;
      disp.auto_window = auto_once = redo = true;
    }
    ImGui::Combo("colour map", &disp.colormap, kMaps, 2);
    ImGui::SliderFloat("gamma", &disp.gamma, 0.3f, 3.f, "%.2f");
    if (ImGui::InputFloat("black", &disp.low, 0, 0, "%.4g")) disp.auto_window = false;
    if (ImGui::InputFloat("white", &disp.high, 0, 0, "%.4g")) disp.auto_window = false;
    ImGui::Checkbox("follow preset (a: once)", &disp.auto_window);
    if (p.slices() > 1) {
      ImGui::SameLine();
      ImGui::Checkbox("same W/L on all slices", &sync_slices);
    }
    ImGui::SameLine();
    ImGui::Checkbox("freeze (space)", &frozen);
    redo |= ImGui::Checkbox("transpose (x)", &orient.transpose);
    ImGui::SameLine();
    redo |= ImGui::Checkbox("flip L-R (h)", &orient.flip_x);
    ImGui::SameLine();
    redo |= ImGui::Checkbox("flip U-D (v)", &orient.flip_y);
    redo |= ImGui::Checkbox("tip marker (t)", &tip_marker);
    if (!volume.empty()) {  // a stack of stars: the planes through the cursor, or projections
      ImGui::SameLine();
      redo |= ImGui::Checkbox("MIP (m)", &mip);
    }
    if (redo && !volume.empty())
      show_volume();
    else if (redo)
      refresh_pixels();
    if (ImGui::Button(p.recording().empty() ? "Record (r)" : "Stop recording (r)")) toggle_record();
    ImGui::SameLine();
    ImGui::SetNextItemWidth(200.f);
    ImGui::InputText("##file", record_name, sizeof record_name);
    if (ImGui::Button("Snapshot (s)")) snapshot();
  }
  if (ImGui::CollapsingHeader("Performance", ImGuiTreeNodeFlags_DefaultOpen)) {
    Metrics& m = p.metrics();
    const auto fv = fps.vec(), ev = e2e.vec(), gv = glass.vec();
    ImGui::Text("display %.1f fps", fv.empty() ? 0.f : fv.back());
    ImGui::PlotLines("##fps", fv.data(), int(fv.size()), 0, "frames/s", 0.f, FLT_MAX, ImVec2(plot_w, 40));
    const auto pe = m.end_to_end.summary(), pg = m.glass.summary();
    const std::int64_t now_ns = monotonic_ns();
    const auto pipe = m.pipeline_recent.summary(now_ns), lag = m.lag_recent.summary(now_ns),
               glass_now = m.glass_recent.summary(now_ns);
    const double behind = m.skipped_recent.sum(now_ns);
    // A series with nothing in it says why rather than 0.00 (no frame yet; a verbatim replay's recorded
    // timestamps, which are not this machine's clock).
    const bool recorded = m.recorded_clock.load();
    const auto ms = [recorded](const Percentiles& q, bool labelled) -> std::string {
      if (q.count == 0) return recorded ? "n/a (recorded timestamps)" : "n/a (no frame yet)";
      return labelled ? fmt::format("p50 {:.2f}  p99 {:.2f} ms", q.p50, q.p99)
                      : fmt::format("{:.1f}/{:.1f}", q.p50, q.p99);
    };
    ImGui::Text("last 10 s, p50/p99 ms:");
    ImGui::Text("  pipeline %s  sender lag %s  glass %s", ms(pipe, false).c_str(), ms(lag, false).c_str(),
                ms(glass_now, false).c_str());
    if (behind > 0)
      ImGui::TextColored(ImVec4(1.f, 0.3f, 0.3f, 1.f), "CANNOT KEEP UP: %.0f skipped in 10 s", behind);
    ImGui::Text("session: acquired -> image ready %s", ms(pe, true).c_str());
    ImGui::PlotLines("##e2e", ev.data(), int(ev.size()), 0, "ms", 0.f, FLT_MAX, ImVec2(plot_w, 40));
    ImGui::Text("session: acquired -> on glass %s", ms(pg, true).c_str());
    ImGui::PlotLines("##glass", gv.data(), int(gv.size()), 0, "ms", 0.f, FLT_MAX, ImVec2(plot_w, 40));
    if (ImGui::BeginTable("stages", 3, ImGuiTableFlags_SizingStretchProp)) {  // per stage, ms
      ImGui::TableSetupColumn("stage");
      ImGui::TableSetupColumn("p50 ms");
      ImGui::TableSetupColumn("p99 ms");
      ImGui::TableHeadersRow();
      for (const auto& [name, pc] : m.stage_summaries()) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(name.c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%.3f", pc.p50);
        ImGui::TableNextColumn();
        ImGui::Text("%.3f", pc.p99);
      }
      ImGui::EndTable();
    }
  }
  panel_scroll_max = ImGui::GetScrollMaxY();
  ImGui::End();
}

}  // namespace radstream::viewer
