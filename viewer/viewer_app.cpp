#define GL_GLEXT_PROTOTYPES
#include "viewer/viewer_app.hpp"

#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <memory>
#include <thread>

#include "core/log.hpp"
#include "io/png_writer.hpp"
#include "viewer/image_view.hpp"
#include "viewer/param_widgets.hpp"

namespace radstream::viewer {
namespace {

constexpr float kPanelWidth = 390.f;
constexpr std::size_t kHistory = 300;

struct History {
  std::deque<float> v;
  void add(float x) {
    v.push_back(x);
    if (v.size() > kHistory) v.pop_front();
  }
  std::vector<float> vec() const { return {v.begin(), v.end()}; }
};

const char* kMaps[] = {"grey", "hot"};

}  // namespace

struct Viewer::Impl {
  StreamRuntime& p;
  ViewerOptions opt;
  GLFWwindow* win = nullptr;
  std::unique_ptr<ImageView> view;
  Display disp;
  std::shared_ptr<const FrameResult> shown;
  std::vector<float> pixels;
  bool frozen = false, fullscreen = false, auto_once = true;
  int win_x = 100, win_y = 100, win_w = 0, win_h = 0;
  History fps, e2e, glass;
  LatencySeries glass_stats{5};
  long displayed = 0;
  std::int64_t t0 = 0, last_fps_t = 0;
  long frames_at_last_fps = 0;
  int ui_window = 0, ui_stride = 0, ui_coil = -1;
  ReconParams ui_recon;
  char record_name[512] = {};
  std::string message;
  bool screenshot_done = false, window_set = false, backend_applied = false;
  // Freshness of the image on screen.
  double frame_interval_s = 0;  // smoothed time between the arrivals of consecutive frames
  double shown_glass_ms = -1;   // the shown frame's acquired -> on glass latency
  struct Freshness {
    double age_s = 0, limit_s = 0;
    bool stale = false;
  };
  Freshness freshness() const;

  Impl(StreamRuntime& pl, const ViewerOptions& o) : p(pl), opt(o) {}
  void upload_latest();
  void handle_mouse(const Rect& area);
  void handle_keys();
  void panels(const Rect& area);
  void overlay(const Rect& area);
  void snapshot();
  void toggle_record();
  void toggle_fullscreen();
  void apply_recon();
  void write_screenshot(int fb_w, int fb_h, const Rect& area);
};

Viewer::Viewer(StreamRuntime& pipeline, const ViewerOptions& opt) : impl_(new Impl(pipeline, opt)) {
  const char* display = std::getenv("DISPLAY");
  const char* wayland = std::getenv("WAYLAND_DISPLAY");
  if ((!display || !*display) && (!wayland || !*wayland)) {
    delete impl_;
    throw Unavailable("no display (DISPLAY and WAYLAND_DISPLAY are unset)");
  }
  glfwSetErrorCallback([](int code, const char* what) { log::debug("GLFW error {}: {}", code, what); });
  if (!glfwInit()) {
    delete impl_;
    throw Unavailable("GLFW could not initialise (no usable display)");
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GL_TRUE);
  Impl& s = *impl_;
  s.win = glfwCreateWindow(opt.width, opt.height, "radstream", nullptr, nullptr);
  if (!s.win) {
    glfwTerminate();
    delete impl_;
    throw Unavailable("no OpenGL 3.3 core context on this display");
  }
  glfwMakeContextCurrent(s.win);
  glfwSwapInterval(1);  // vsync
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::GetIO().IniFilename = nullptr;
  ImGui::StyleColorsDark();
  ImGui_ImplGlfw_InitForOpenGL(s.win, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  try {
    s.view = std::make_unique<ImageView>();
  } catch (const std::exception& e) {
    shutdown();
    throw Unavailable(e.what());
  }
  s.ui_window = pipeline.window();
  s.ui_stride = pipeline.stride();
  s.ui_recon = pipeline.recon();
  std::string record = opt.record_path;
  if (record.empty()) {  // a new name per session: a recording never replaces an earlier one
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    record = std::string("out/record/stream-") + stamp + ".h5";
  }
  std::snprintf(s.record_name, sizeof s.record_name, "%s", record.c_str());
  log::info("viewer: OpenGL {} ({})", reinterpret_cast<const char*>(glGetString(GL_VERSION)),
            reinterpret_cast<const char*>(glGetString(GL_RENDERER)));
}

Viewer::~Viewer() {
  shutdown();
}

void Viewer::shutdown() noexcept {
  impl_->view.reset();  // reverse order: our GL objects, the ImGui backends, ImGui, the window, GLFW
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(impl_->win);
  glfwTerminate();
  delete impl_;
  impl_ = nullptr;
}

void Viewer::Impl::upload_latest() {
  if (frozen) return;
  auto f = p.latest();
  if (!f || f == shown) return;
  if (shown && shown->last_arrival_ns > 0 && f->last_arrival_ns > shown->last_arrival_ns) {
    const double dt = double(f->last_arrival_ns - shown->last_arrival_ns) * 1e-9;
    frame_interval_s = frame_interval_s > 0 ? 0.8 * frame_interval_s + 0.2 * dt : dt;
  }
  shown = f;
  shown_glass_ms = -1;
  pixels.resize(f->image.size());
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = f->image[i].real();
  view->upload(pixels, f->matrix);
  if (disp.auto_window || auto_once) {
    percentile_window(pixels, 0.01f, 0.995f, disp.low, disp.high);
    disp.low = std::max(0.f, disp.low);
    auto_once = false;
  }
}

void Viewer::Impl::handle_mouse(const Rect& area) {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantCaptureMouse) return;
  const ImVec2 m = io.MousePos;
  if (m.x < area.x || m.x > area.x + area.w || m.y < area.y || m.y > area.y + area.h) return;
  if (io.MouseWheel != 0.f) {  // zoom about the cursor
    const Rect before = view->placement(disp, area);
    const float fx = (m.x - before.x) / before.w, fy = (m.y - before.y) / before.h;
    disp.zoom = std::clamp(disp.zoom * std::pow(1.15f, io.MouseWheel), 0.2f, 40.f);
    const Rect after = view->placement(disp, area);
    disp.pan_x += (m.x - (after.x + fx * after.w)) / after.w;
    disp.pan_y += (m.y - (after.y + fy * after.h)) / after.h;
  }
  const Rect r = view->placement(disp, area);
  if (ImGui::IsMouseDragging(ImGuiMouseButton_Left)) {
    disp.pan_x += io.MouseDelta.x / r.w;
    disp.pan_y += io.MouseDelta.y / r.h;
  }
  if (ImGui::IsMouseDragging(ImGuiMouseButton_Right)) {  // window/level: x widens, y moves the level
    disp.auto_window = false;
    const float width = disp.high - disp.low, level = 0.5f * (disp.high + disp.low);
    const float nw = std::max(1e-9f, width * std::exp(io.MouseDelta.x * 0.01f));
    const float nl = level - io.MouseDelta.y * width * 0.005f;
    disp.low = nl - 0.5f * nw;
    disp.high = nl + 0.5f * nw;
  }
  if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) disp.zoom = 1.f, disp.pan_x = disp.pan_y = 0.f;
}

void Viewer::Impl::handle_keys() {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantCaptureKeyboard) return;
  if (ImGui::IsKeyPressed(GLFW_KEY_SPACE, false)) frozen = !frozen;
  if (ImGui::IsKeyPressed(GLFW_KEY_R, false)) toggle_record();
  if (ImGui::IsKeyPressed(GLFW_KEY_S, false)) snapshot();
  if (ImGui::IsKeyPressed(GLFW_KEY_F, false)) toggle_fullscreen();
  if (ImGui::IsKeyPressed(GLFW_KEY_A, false)) auto_once = true;
  if (ImGui::IsKeyPressed(GLFW_KEY_ESCAPE, false) && fullscreen) toggle_fullscreen();
}

void Viewer::Impl::snapshot() {
  if (pixels.empty() || !shown) return;
  std::filesystem::create_directories(opt.snapshot_dir);
  const std::string path = fmt::format("{}/frame_{:06d}.png", opt.snapshot_dir, shown->number);
  try {
    write_png_grey(path, pixels, shown->matrix, shown->matrix, disp.low, disp.high);
    message = "snapshot: " + path;
  } catch (const std::exception& e) {
    message = std::string("snapshot failed: ") + e.what();
  }
  log::info("viewer: {}", message);
}

void Viewer::Impl::toggle_record() {
  try {
    p.set_recording(p.recording().empty() ? std::string(record_name) : std::string());
    message = p.recording().empty() ? "recording stopped: " + p.recording_status() : "recording to " + p.recording();
  } catch (const std::exception& e) {
    message = std::string("record: ") + e.what();
  }
}

void Viewer::Impl::toggle_fullscreen() {
  GLFWmonitor* mon = glfwGetPrimaryMonitor();
  if (!fullscreen && mon) {
    glfwGetWindowPos(win, &win_x, &win_y);
    glfwGetWindowSize(win, &win_w, &win_h);
    const GLFWvidmode* mode = glfwGetVideoMode(mon);
    glfwSetWindowMonitor(win, mon, 0, 0, mode->width, mode->height, mode->refreshRate);
    fullscreen = true;
  } else if (fullscreen) {
    glfwSetWindowMonitor(win, nullptr, win_x, win_y, win_w, win_h, 0);
    fullscreen = false;
  }
}

void Viewer::Impl::apply_recon() {
  try {
    p.set_recon(ui_recon);
    message = "reconstruction settings applied at the next frame";
  } catch (const std::exception& e) {
    message = e.what();
    ui_recon = p.recon();
  }
}

void Viewer::Impl::panels(const Rect& area) {
  Metrics& m = p.metrics();
  const float x = area.x + area.w + 4.f;
  float y = 4.f;
  const ImGuiWindowFlags flags =
      ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse;
  auto place = [&](float h) {
    ImGui::SetNextWindowPos(ImVec2(x, y));
    ImGui::SetNextWindowSize(ImVec2(kPanelWidth - 8.f, h));
    y += h + 4.f;
  };
  // Stream status.
  place(130.f);
  ImGui::Begin("Stream", nullptr, flags);
  const std::int64_t last = m.last_message_ns.load();
  const double age = last ? double(monotonic_ns() - last) * 1e-9 : -1.0;
  const bool connected = last && !m.sender_lost.load();
  ImGui::Text("%s  %s", p.endpoint().c_str(), connected ? "connected" : (last ? "SENDER LOST" : "waiting"));
  ImGui::Text("spokes %llu   frames %llu   skipped %llu", (unsigned long long)m.spokes.load(),
              (unsigned long long)m.frames.load(), (unsigned long long)m.frames_skipped.load());
  ImGui::Text("last message %s ago", age < 0 ? "-" : fmt::format("{:.2f} s", age).c_str());
  ImGui::Text("missing %llu in %llu gaps", (unsigned long long)m.missing.load(),
              (unsigned long long)m.gaps.load());
  std::string bad;
  for (int r = 0; r < wire::kRejectCount; ++r)
    if (m.rejected[r]) bad += fmt::format("{} {}  ", wire::to_string(wire::Reject(r)), m.rejected[r].load());
  ImGui::TextWrapped("bad messages: %s", bad.empty() ? "none" : bad.c_str());
  ImGui::End();
  // Reconstruction controls: applied between frames, no restart.
  place(290.f);
  ImGui::Begin("Reconstruction", nullptr, flags);
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
  ParamWidgets widgets;  // every reconstruction key, from ReconParams::visit()
  ImGui::PushItemWidth(150.f);
  ui_recon.visit(widgets);
  ImGui::PopItemWidth();
  if (ImGui::Button("Apply")) apply_recon();
  ImGui::SameLine();
  ImGui::TextDisabled("(takes effect at the next frame)");
  if (ImGui::SliderInt("coil view", &ui_coil, -1, std::max(0, p.stream_header().coils - 1),
                       ui_coil < 0 ? "combined" : "coil %d"))
    p.set_coil_view(ui_coil);
  if (!p.last_error().empty()) ImGui::TextWrapped("last error: %s", p.last_error().c_str());
  ImGui::End();
  // Display.
  place(185.f);
  ImGui::Begin("Display", nullptr, flags);
  ImGui::Combo("colour map", &disp.colormap, kMaps, 2);
  ImGui::SliderFloat("gamma", &disp.gamma, 0.3f, 3.f, "%.2f");
  if (ImGui::InputFloat("black", &disp.low, 0, 0, "%.4g")) disp.auto_window = false;
  if (ImGui::InputFloat("white", &disp.high, 0, 0, "%.4g")) disp.auto_window = false;
  ImGui::Checkbox("auto window (a)", &disp.auto_window);
  ImGui::SameLine();
  ImGui::Checkbox("freeze (space)", &frozen);
  if (ImGui::Button(p.recording().empty() ? "Record (r)" : "Stop recording (r)")) toggle_record();
  ImGui::SameLine();
  ImGui::SetNextItemWidth(200.f);
  ImGui::InputText("##file", record_name, sizeof record_name);
  if (ImGui::Button("Snapshot (s)")) snapshot();
  ImGui::SameLine();
  if (ImGui::Button("Fullscreen (f)")) toggle_fullscreen();
  ImGui::End();
  // Performance.
  place(std::max(190.f, area.h - y - 4.f));
  ImGui::Begin("Performance", nullptr, flags);
  const auto fv = fps.vec(), ev = e2e.vec(), gv = glass.vec();
  ImGui::Text("display %.1f fps", fv.empty() ? 0.f : fv.back());
  ImGui::PlotLines("##fps", fv.data(), int(fv.size()), 0, "frames/s", 0.f, FLT_MAX,
                   ImVec2(kPanelWidth - 30, 40));
  const auto pe = m.end_to_end.summary(), pg = glass_stats.summary();
  const std::int64_t now_ns = monotonic_ns();
  const auto pipe = m.pipeline_recent.summary(now_ns), lag = m.lag_recent.summary(now_ns);
  const double behind = m.skipped_recent.sum(now_ns);
  ImGui::Text("last 10 s p50/p99: pipeline %.1f/%.1f  lag %.1f/%.1f ms", pipe.p50, pipe.p99, lag.p50, lag.p99);
  if (behind > 0)
    ImGui::TextColored(ImVec4(1.f, 0.3f, 0.3f, 1.f), "CANNOT KEEP UP: %.0f skipped in 10 s", behind);
  ImGui::Text("acquired -> image ready: p50 %.2f  p99 %.2f ms", pe.p50, pe.p99);
  ImGui::PlotLines("##e2e", ev.data(), int(ev.size()), 0, "ms", 0.f, FLT_MAX, ImVec2(kPanelWidth - 30, 40));
  ImGui::Text("acquired -> on glass: p50 %.2f  p99 %.2f ms", pg.p50, pg.p99);
  ImGui::PlotLines("##glass", gv.data(), int(gv.size()), 0, "ms", 0.f, FLT_MAX, ImVec2(kPanelWidth - 30, 40));
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
  ImGui::End();
}

Viewer::Impl::Freshness Viewer::Impl::freshness() const {
  Freshness f;
  if (!shown) return f;
  const std::int64_t now = monotonic_ns();
  const std::int64_t since = shown->last_arrival_ns > 0 ? shown->last_arrival_ns : shown->ready_ns;
  f.age_s = double(now - since) * 1e-9;
  f.limit_s = opt.stale_after_s > 0 ? opt.stale_after_s
                                    : (frame_interval_s > 0 ? std::max(0.3, 3.0 * frame_interval_s) : 1.0);
  f.stale = f.age_s > f.limit_s;
  return f;
}

void Viewer::Impl::overlay(const Rect& area) {
  ImDrawList* dl = ImGui::GetForegroundDrawList();
  if (!shown) {
    dl->AddText(ImVec2(area.x + 20, area.y + 20), IM_COL32(220, 220, 220, 255), "waiting for spokes...");
    return;
  }
  const Rect r = view->placement(disp, area);
  const int n = shown->matrix;
  // Pixel value under the cursor.
  const ImVec2 m = ImGui::GetIO().MousePos;
  std::string line = fmt::format(
      "frame {}  spokes {}..{}  W {}{}{}{}", shown->number, shown->first_spoke, shown->last_spoke,
      shown->window, shown->coil >= 0 ? fmt::format("  coil {}", shown->coil) : "",
      shown->iterations >= 0 ? fmt::format("  CG {} it, res {:.2g}", shown->iterations, shown->residual) : "",
      frozen ? "  FROZEN" : "");
  if (m.x >= r.x && m.x < r.x + r.w && m.y >= r.y && m.y < r.y + r.h) {
    const int px = std::clamp(int((m.x - r.x) / r.w * float(n)), 0, n - 1);
    const int py = std::clamp(int((m.y - r.y) / r.h * float(n)), 0, n - 1);
    line += fmt::format("   ({}, {}) = {:.4g}", px, py, pixels[std::size_t(py) * n + px]);
  }
  dl->AddText(ImVec2(area.x + 10, area.y + 8), IM_COL32(255, 255, 0, 255), line.c_str());
  // Freshness, on the image itself: LIVE with the frame's latency, or dimmed under a red banner with its age.
  const Freshness fr = freshness();
  ImFont* font = ImGui::GetFont();
  if (fr.stale || frozen) {
    const bool lost = p.metrics().sender_lost.load();
    if (!frozen) dl->AddRectFilled(ImVec2(r.x, r.y), ImVec2(r.x + r.w, r.y + r.h), IM_COL32(0, 0, 0, 170));
    const std::string banner =
        frozen ? fmt::format("FROZEN - image {:.1f} s old", fr.age_s)
               : fmt::format("NO NEW DATA - image {:.1f} s old{}", fr.age_s, lost ? " - SENDER LOST" : "");
    const float by = r.y + r.h * 0.45f;
    dl->AddRectFilled(ImVec2(r.x, by), ImVec2(r.x + r.w, by + 44.f),
                      frozen ? IM_COL32(170, 120, 0, 230) : IM_COL32(200, 0, 0, 235));
    dl->AddText(font, 28.f, ImVec2(r.x + 16.f, by + 8.f), IM_COL32(255, 255, 255, 255), banner.c_str());
  } else {
    const std::string live =
        shown_glass_ms >= 0 ? fmt::format("LIVE  {:.0f} ms", shown_glass_ms) : std::string("LIVE");
    const float lx = std::min(r.x + r.w, area.x + area.w) - 160.f, ly = r.y + 2.f;
    dl->AddRectFilled(ImVec2(lx, ly), ImVec2(lx + 150.f, ly + 30.f), IM_COL32(0, 150, 0, 220));
    dl->AddText(font, 22.f, ImVec2(lx + 8.f, ly + 4.f), IM_COL32(255, 255, 255, 255), live.c_str());
  }
  if (!message.empty())
    dl->AddText(ImVec2(area.x + 10, area.y + area.h - 24), IM_COL32(200, 200, 255, 255), message.c_str());
  // Orientation (one convention everywhere, README "Orientation"): x to the right, y downward.
  dl->AddText(ImVec2(area.x + 10, area.y + area.h - 44), IM_COL32(180, 180, 180, 255),
              "x -> (kx, BART dim 0)   y down (ky, dim 1)");
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

void Viewer::Impl::write_screenshot(int fb_w, int fb_h, const Rect& area) {
  std::vector<unsigned char> rgb(std::size_t(fb_w) * fb_h * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, fb_w, fb_h, GL_RGB, GL_UNSIGNED_BYTE, rgb.data());
  std::vector<unsigned char> flipped(rgb.size());
  for (int y = 0; y < fb_h; ++y)
    std::copy_n(rgb.data() + std::size_t(fb_h - 1 - y) * fb_w * 3, std::size_t(fb_w) * 3,
                flipped.data() + std::size_t(y) * fb_w * 3);
  const std::filesystem::path path(opt.screenshot);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  if (!stbi_write_png(path.c_str(), fb_w, fb_h, 3, flipped.data(), fb_w * 3))
    log::error("viewer: cannot write {}", path.string());
  const Rect r = view->placement(disp, area);
  std::ofstream j(path.string() + ".json");
  j << fmt::format(
      "{{\"frame\": {}, \"first_spoke\": {}, \"last_spoke\": {}, \"window\": {}, \"matrix\": {}, "
      "\"image_rect\": "
      "[{:.2f}, {:.2f}, {:.2f}, {:.2f}], \"panel_x\": {:.1f}, \"low\": {:.6g}, \"high\": {:.6g}, \"gamma\": "
      "{}, "
      "\"colormap\": {}, \"fb\": [{}, {}], \"pipeline_window\": {}, \"backend\": \"{}\", \"message\": {}, "
      "\"stale\": {}, \"age_s\": {:.3f}, \"stale_after_s\": {:.3f}}}\n",
      shown ? shown->number : 0, shown ? shown->first_spoke : 0, shown ? shown->last_spoke : 0,
      shown ? shown->window : 0, shown ? shown->matrix : 0, r.x, r.y, r.w, r.h, area.x + area.w, disp.low,
      disp.high, disp.gamma, disp.colormap, fb_w, fb_h, p.window(), to_string(p.backend()),
      nlohmann::json(message).dump(), freshness().stale ? "true" : "false", freshness().age_s,
      freshness().limit_s);
  log::info("viewer: screenshot {} (frame {})", path.string(), shown ? shown->number : 0);
}

long Viewer::run() {
  Impl& s = *impl_;
  s.t0 = s.last_fps_t = monotonic_ns();
  bool screenshot_pending = false;
  while (!glfwWindowShouldClose(s.win)) {
    glfwPollEvents();
    if (glfwGetWindowAttrib(s.win, GLFW_ICONIFIED)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    const double t = double(monotonic_ns() - s.t0) * 1e-9;
    if (s.opt.set_window > 0 && !s.window_set && t >= 1.0) {  // as if the slider were moved
      s.window_set = true;
      s.ui_window = s.opt.set_window;
      s.p.set_window(s.ui_window);
    }
    if (!s.opt.apply_backend.empty() && !s.backend_applied && t >= 1.5) {  // as if chosen and Apply pressed
      s.backend_applied = true;
      try {
        s.ui_recon.backend = parse_backend(s.opt.apply_backend);
        s.apply_recon();
      } catch (const std::exception& e) {
        s.message = e.what();
      }
      log::info("viewer: apply backend {}: {}", s.opt.apply_backend, s.message);
    }
    if ((s.opt.close_after_s > 0 && t >= s.opt.close_after_s) || (s.opt.should_close && s.opt.should_close()))
      glfwSetWindowShouldClose(s.win, GLFW_TRUE);
    const auto before = s.shown;
    s.upload_latest();
    const bool fresh = s.shown && s.shown != before;
    int fb_w = 0, fb_h = 0, w_w = 0, w_h = 0;
    glfwGetFramebufferSize(s.win, &fb_w, &fb_h);
    glfwGetWindowSize(s.win, &w_w, &w_h);
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    const Rect area{0.f, 0.f, std::max(50.f, float(w_w) - kPanelWidth), float(w_h)};
    s.handle_mouse(area);
    s.handle_keys();
    s.panels(area);
    s.overlay(area);
    ImGui::Render();
    glViewport(0, 0, fb_w, fb_h);
    glClearColor(0.06f, 0.06f, 0.07f, 1.f);
    glClear(GL_COLOR_BUFFER_BIT);
    const float sx = w_w ? float(fb_w) / float(w_w) : 1.f, sy = w_h ? float(fb_h) / float(w_h) : 1.f;
    s.view->draw(s.disp, Rect{area.x * sx, area.y * sy, area.w * sx, area.h * sy}, fb_w, fb_h);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!s.opt.screenshot.empty() && !s.screenshot_done && t >= s.opt.screenshot_after_s && s.shown) {
      screenshot_pending = true;
      s.write_screenshot(fb_w, fb_h, area);
      s.screenshot_done = true;
    }
    glfwSwapBuffers(s.win);
    const std::int64_t now = monotonic_ns();
    if (fresh) {  // the frame's "shown" time is this swap
      ++s.displayed;
      if (s.shown->last_acquired_ns > 0) {
        const double ms = double(now - s.shown->last_acquired_ns) * 1e-6;
        s.glass.add(float(ms));
        s.shown_glass_ms = ms;
        s.glass_stats.add(ms);
        s.p.metrics().add_stage("to_glass", ms);
        s.e2e.add(float(double(s.shown->ready_ns - s.shown->last_acquired_ns) * 1e-6));
      }
    }
    if (now - s.last_fps_t >= 500000000) {
      s.fps.add(float(double(s.displayed - s.frames_at_last_fps) / (double(now - s.last_fps_t) * 1e-9)));
      s.frames_at_last_fps = s.displayed;
      s.last_fps_t = now;
    }
  }
  static_cast<void>(screenshot_pending);
  const auto g = s.glass_stats.summary();
  log::info("viewer: closed; {} frames shown, acquired -> on glass p50 {:.2f} ms, p99 {:.2f} ms", s.displayed,
            g.p50, g.p99);
  return s.displayed;
}

}  // namespace radstream::viewer
