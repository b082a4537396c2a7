#define GL_GLEXT_PROTOTYPES
#include "viewer/viewer_app.hpp"

#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <thread>

#include "core/log.hpp"
#include "io/png_writer.hpp"
#include "viewer/viewer_state.hpp"

namespace radstream::viewer {

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
  int width = opt.width, height = opt.height;
  if (GLFWmonitor* mon = glfwGetPrimaryMonitor()) {  // never larger than the screen: 1024 x 768 shows all
    if (const GLFWvidmode* mode = glfwGetVideoMode(mon)) {
      width = std::min(width, mode->width);
      height = std::min(height, mode->height);
    }
  }
  s.win = glfwCreateWindow(width, height, "radstream", nullptr, nullptr);
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
    s.make_slice_views();
  } catch (const std::exception& e) {
    shutdown();
    throw Unavailable(e.what());
  }
  s.ui_window = pipeline.window();
  s.ui_stride = pipeline.stride();
  s.ui_recon = pipeline.recon();
  s.orient = opt.orientation;
  s.preset = opt.preset;
  s.tip_marker = opt.tip_marker;
  if (opt.clinical) s.toggle_clinical();
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
  impl_->others.clear();
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
  // The stream's nominal frame interval: the time its spokes took to arrive per spoke, times the stride. Not
  // the interval between shown frames, which stretches when frames are skipped (a pipeline that cannot keep
  // up must not widen its own freshness limit).
  if (shown && shown->last_arrival_ns > 0 && f->last_arrival_ns > shown->last_arrival_ns &&
      f->slice == shown->slice && f->end_serial > shown->end_serial) {
    const double per_spoke = double(f->last_arrival_ns - shown->last_arrival_ns) * 1e-9 /
                             double(f->end_serial - shown->end_serial);
    const double nominal = per_spoke * double(std::max(1, p.stride()));
    frame_interval_s = frame_interval_s > 0 ? 0.8 * frame_interval_s + 0.2 * nominal : nominal;
  }
  shown = f;  // shown_glass_ms keeps the previous frame's latency until this one reaches the glass
  if (f->depth > 1) {
    volume.resize(f->image.size());
    for (std::size_t i = 0; i < volume.size(); ++i) volume[i] = f->image[i].real();
    show_volume();
    return;
  }
  volume.clear();
  std::erase_if(others, [](const SliceView& v) { return v.plane > 0; });
  raw.resize(f->image.size());
  for (std::size_t i = 0; i < raw.size(); ++i) raw[i] = f->image[i].real();
  refresh_pixels();
}

void Viewer::Impl::show_volume() {
  if (!shown || volume.empty()) return;
  const int n = shown->matrix, depth = shown->depth;
  cursor = display::Cursor3{n / 2, n / 2, depth / 2};
  cursor_on_tip = false;
  if (tip_marker) {  // the cursor follows the tip, found in the volume as reconstructed (not turned)
    const display::Tip3 t = display::find_tip_3d(volume, n, depth);
    if (t.found) {
      cursor = display::Cursor3{int(std::lround(t.x)), int(std::lround(t.y)), int(std::lround(t.z))};
      cursor_on_tip = true;
    }
  }
  display::VolumePlanes planes = display::volume_planes(volume, n, depth, cursor, mip);
  raw = std::move(planes.axial);
  for (int k : {1, 2}) {
    auto it = std::find_if(others.begin(), others.end(), [k](const SliceView& v) { return v.plane == k; });
    if (it == others.end()) {
      SliceView v;
      v.plane = k;
      v.view = std::make_unique<ImageView>();
      others.push_back(std::move(v));
      it = std::prev(others.end());
    }
    it->label = k == 1 ? "coronal (x across, z down)" : "sagittal (y across, z down)";
    it->shown = shown;
    it->raw = k == 1 ? planes.coronal : planes.sagittal;
    it->dirty = true;
  }
  refresh_pixels();
}

void Viewer::Impl::refresh_pixels() {
  if (!shown || raw.empty()) return;
  const int n = shown->matrix;
  display::orient(raw, n, orient, pixels);
  view->upload(pixels, n);
  if (disp.auto_window || auto_once) {
    const display::WindowLevel w = display::preset_window(pixels, n, preset);
    disp.low = w.low;
    disp.high = w.high;
    auto_once = false;
  }
  tip = tip_marker ? display::find_tip(pixels, n) : display::Tip{};
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
  const auto pressed = [](int key) { return ImGui::IsKeyPressed(key, false); };
  if (pressed(GLFW_KEY_SPACE)) frozen = !frozen;
  if (pressed(GLFW_KEY_R)) toggle_record();
  if (pressed(GLFW_KEY_S)) snapshot();
  if (pressed(GLFW_KEY_F)) toggle_fullscreen();
  if (pressed(GLFW_KEY_C)) toggle_clinical();
  if (pressed(GLFW_KEY_A)) auto_once = true;
  if (pressed(GLFW_KEY_SLASH)) legend = !legend;  // the ? key
  bool turned = false, rewindow = false;
  const display::WindowPreset presets[] = {display::WindowPreset::Auto, display::WindowPreset::Object,
                                           display::WindowPreset::Full};
  for (int k = 0; k < 3; ++k)
    if (pressed(GLFW_KEY_1 + k)) preset = presets[k], disp.auto_window = true, rewindow = true;
  if (pressed(GLFW_KEY_T)) tip_marker = !tip_marker, turned = true;
  if (pressed(GLFW_KEY_X)) orient.transpose = !orient.transpose, turned = true;
  if (pressed(GLFW_KEY_H)) orient.flip_x = !orient.flip_x, turned = true;
  if (pressed(GLFW_KEY_V)) orient.flip_y = !orient.flip_y, turned = true;
  if (rewindow) auto_once = true;
  if (pressed(GLFW_KEY_M) && !volume.empty()) mip = !mip, turned = true;
  if ((turned || rewindow) && !volume.empty())
    show_volume();
  else if (turned || rewindow)
    refresh_pixels();
  if (pressed(GLFW_KEY_ESCAPE)) {
    if (clinical)
      toggle_clinical();
    else if (fullscreen)
      toggle_fullscreen();
  }
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
    message = p.recording().empty() ? "recording stopped: " + p.recording_status()
                                    : "recording to " + p.recording();
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

// The clinical display: the image alone on the whole screen (no panels), with its overlay of frame, age,
// latency and freshness; c or Escape returns to the panels and the window as it was.
void Viewer::Impl::toggle_clinical() {
  clinical = !clinical;
  if (clinical != fullscreen) toggle_fullscreen();
  message = clinical ? "clinical display: c or Esc returns to the panels" : "";
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

void Viewer::Impl::move_window_slider(int window) {
  ui_window = window;
  p.set_window(ui_window);
}

std::string Viewer::Impl::apply_backend(const std::string& backend) {
  try {
    ui_recon.backend = parse_backend(backend);
    apply_recon();
  } catch (const std::exception& e) {
    message = e.what();
  }
  return message;
}

void Viewer::Impl::follow_preparation() {
  if (!opt.waiting_note || shown) return;
  const std::string note = opt.waiting_note();
  if (!note.empty() && !preparing) {
    preparing = true;
    log::info("viewer: the window is open; {}", note);
  } else if (note.empty() && preparing) {
    preparing = false;
    t0 = monotonic_ns();  // the script's clock starts with the stream
    log::info("viewer: the source is ready");
  }
}

void Viewer::Impl::close() {
  glfwSetWindowShouldClose(win, GLFW_TRUE);
}

long Viewer::run() {
  Impl& s = *impl_;
  s.t0 = s.last_fps_t = monotonic_ns();
  while (!glfwWindowShouldClose(s.win)) {
    glfwPollEvents();
    if (glfwGetWindowAttrib(s.win, GLFW_ICONIFIED)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    s.follow_preparation();
    const double t = s.preparing ? 0.0 : double(monotonic_ns() - s.t0) * 1e-9;
    if (s.opt.driver) s.opt.driver->step(t, s);
    if (s.opt.should_close && s.opt.should_close()) s.close();
    if (!s.stream_done && s.opt.stream_done && s.opt.stream_done()) {
      s.stream_done = true;
      s.message = "STREAM ENDED";
      log::info("viewer: the stream ended; the last image stays on screen until the window is closed");
    }
    const auto before = s.shown;
    s.upload_latest();
    const bool fresh = s.shown && s.shown != before;
    s.sample_drops(monotonic_ns());
    int fb_w = 0, fb_h = 0, w_w = 0, w_h = 0;
    glfwGetFramebufferSize(s.win, &fb_w, &fb_h);
    glfwGetWindowSize(s.win, &w_w, &w_h);
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    const Rect full{0.f, 0.f, s.clinical ? float(w_w) : std::max(50.f, float(w_w) - kPanelWidth), float(w_h)};
    s.update_slices();                          // (the columns first: an MRD session's frame adds one)
    const Rect area = s.slice_column(full, 0);  // slice 0 (the whole area for a one-slice stream)
    s.handle_mouse(area);
    s.handle_keys();
    if (!s.clinical) s.panels(full);
    s.overlay(area);
    s.overlay_slices(full);
    ImGui::Render();
    glViewport(0, 0, fb_w, fb_h);
    glClearColor(0.06f, 0.06f, 0.07f, 1.f);
    glClear(GL_COLOR_BUFFER_BIT);
    const float sx = w_w ? float(fb_w) / float(w_w) : 1.f, sy = w_h ? float(fb_h) / float(w_h) : 1.f;
    s.view->draw(s.disp, Rect{area.x * sx, area.y * sy, area.w * sx, area.h * sy}, fb_w, fb_h);
    s.draw_slices(full, sx, sy, fb_w, fb_h);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (!s.pending_screenshot.empty()) {
      s.write_screenshot(s.pending_screenshot, fb_w, fb_h, area);
      s.pending_screenshot.clear();
    }
    glfwSwapBuffers(s.win);
    const std::int64_t now = monotonic_ns();
    if (fresh) {  // the frame's "shown" time is this swap
      ++s.displayed;
      if (!s.p.metrics().recorded_clock.load() && sender_clock_plausible(s.shown->last_acquired_ns, now)) {
        const double ms = double(now - s.shown->last_acquired_ns) * 1e-6;
        s.glass.add(float(ms));
        s.shown_glass_ms = ms;
        s.p.metrics().add_glass(ms);
        s.e2e.add(float(double(s.shown->ready_ns - s.shown->last_acquired_ns) * 1e-6));
      }
    }
    if (now - s.last_fps_t >= 500000000) {
      s.fps.add(float(double(s.displayed - s.frames_at_last_fps) / (double(now - s.last_fps_t) * 1e-9)));
      s.frames_at_last_fps = s.displayed;
      s.last_fps_t = now;
    }
  }
  const auto g = s.p.metrics().glass.summary();
  if (g.count == 0)  // no frame with this session's clock (a verbatim replay, or none shown): no figure
    log::info("viewer: closed; {} frames shown, acquired -> on glass n/a", s.displayed);
  else
    log::info("viewer: closed; {} frames shown, acquired -> on glass p50 {:.2f} ms, p99 {:.2f} ms",
              s.displayed, g.p50, g.p99);
  return s.displayed;
}

}  // namespace radstream::viewer
