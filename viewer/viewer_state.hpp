// The viewer's state, shared by its parts (private to viewer/): viewer_app.cpp (the window, the loop, keys,
// mouse and actions), viewer_panels.cpp (the side panel), viewer_overlay.cpp (what is drawn on the image:
// freshness, orientation, the tip marker, the scale bar; and the screenshot for tests).
#pragma once
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <algorithm>

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "display/orientation.hpp"
#include "display/tip_finder.hpp"
#include "display/volume_planes.hpp"
#include "display/window_presets.hpp"
#include "viewer/image_view.hpp"
#include "viewer/viewer_app.hpp"

namespace radstream::viewer {

inline constexpr float kPanelWidth = 390.f;

struct History {
  static constexpr std::size_t kLength = 300;
  std::deque<float> v;
  void add(float x) {
    v.push_back(x);
    if (v.size() > kLength) v.pop_front();
  }
  std::vector<float> vec() const { return {v.begin(), v.end()}; }
};

// Another slice's image beside slice 0's (viewer_slices.cpp).
struct SliceView {
  int slice = 0;
  std::string session;  // a protocol session's column ("session 3"); empty: slice `slice` of the stream
  std::string label;    // what its column says it shows
  std::shared_ptr<const FrameResult> offered;  // a session's newest frame (from the runtime's mailboxes)
  std::unique_ptr<ImageView> view;
  std::shared_ptr<const FrameResult> shown;
  std::vector<float> raw, pixels;
  Display disp;  // its own preset window (used when the slices are not synchronized)
  bool dirty = false;
  // 1 coronal, 2 sagittal: a plane of the main view's volume (a stack of stars), fed with it; 0: a slice's
  // or a session's own frames.
  int plane = 0;
};

struct Viewer::Impl final : ViewerControls {
  StreamRuntime& p;
  ViewerOptions opt;
  GLFWwindow* win = nullptr;
  std::unique_ptr<ImageView> view;
  Display disp;
  std::shared_ptr<const FrameResult> shown;
  std::vector<float> raw;     // the frame's real part as reconstructed
  std::vector<float> pixels;  // as shown: turned by `orient`
  display::Orientation orient;
  display::WindowPreset preset = display::WindowPreset::Auto;
  bool clinical = false, tip_marker = false;
  display::Tip tip;  // in shown pixels
  // A volume (a stack of stars' frame): the main view shows its axial plane, two columns its coronal and
  // sagittal planes, through the cursor (the 3D tip with the tip marker on, else the centre), or MIPs.
  std::vector<float> volume;  // [depth][n][n] of `shown`
  bool mip = false;
  display::Cursor3 cursor;
  bool cursor_on_tip = false;  // the cursor is the tip found in 3D (its planes' columns ring it too)
  void show_volume();          // volume -> the three planes (raw, the columns' raw), then refresh_pixels
  bool frozen = false, fullscreen = false, auto_once = true;
  int win_x = 100, win_y = 100, win_w = 0, win_h = 0;
  History fps, e2e, glass;
  long displayed = 0;
  std::int64_t t0 = 0, last_fps_t = 0;
  // The source is being prepared (opt.waiting_note says so): a script's clock (screenshots, close-after)
  // starts when that is over, so that unattended runs time what they see of the stream.
  bool preparing = false;
  long frames_at_last_fps = 0;
  int ui_window = 0, ui_stride = 0, ui_coil = -1;
  ReconParams ui_recon;
  char record_name[512] = {};
  std::string message;
  std::string pending_screenshot;  // a driver's request, written after this pass renders
  float panel_scroll_max = 0.f;    // how far the side panel scrolls (0: everything fits)
  // Freshness of the image on screen.
  double frame_interval_s = 0;  // smoothed nominal frame interval: stride x the time per arriving spoke
  double shown_glass_ms = -1;   // the shown frame's acquired -> on glass latency
  // Frames made and skipped, sampled every 0.25 s from the first frame shown (skips while the pipeline
  // started, before any image was on screen, are not drops the user saw); the last 10 s are kept.
  struct DropSample {
    std::int64_t t_ns;
    std::uint64_t made, skipped;
  };
  std::deque<DropSample> drops;
  void sample_drops(std::int64_t now_ns);
  // What the marker on the image says: live (green LIVE), delayed (amber DELAYED: over the latency budget,
  // frames dropped in the last 10 s, or an image older than the freshness limit while spokes still arrive),
  // stale (dimmed under the red banner: no new data, or an image past 1 s), frozen (the user's freeze).
  enum class LiveState { waiting, live, delayed, stale, frozen };
  struct Freshness {
    double age_s = 0, limit_s = 0;
    bool stale = false;
    bool arriving = false;  // spokes still come (the sender neither quiet, lost nor ended)
    LiveState state = LiveState::waiting;
    std::uint64_t dropped_10s = 0, due_10s = 0;  // frames skipped, and made + skipped, in the last 10 s
    bool over_budget = false;
  };
  Freshness freshness() const;
  static const char* state_name(LiveState s);
  void draw_live_marker(ImDrawList* dl, ImFont* font, const Rect& r, const Rect& area, const Freshness& fr,
                        float line_end);
  bool legend = false;                  // key ?: the one-line legend of age and latency
  float live_marker[4] = {0, 0, 0, 0};  // where the marker was drawn (x, y, w, h), for the screenshot JSON
  // The freshness the last overlay was drawn with (empty: none drawn): the screenshot JSON reports it, not a
  // later reading, so that its state is the one the pixels show.
  std::optional<Freshness> drawn_freshness;
  std::string waiting_text;  // what the window said while no image had come (the screenshot JSON's "waiting")
  float rec_marker[4] = {0, 0, 0, 0};  // the red REC while recording (x, y, w, h)
  float tip_text[4] = {0, 0, 0, 0};    // where "tip: not found" was drawn (x, y, w, h); zeros: not drawn
  bool tip_ringed = false;             // the last overlay drew the tip's ring (never on an image not live)
  bool tip_hidden_not_live = false;    // a tip was found but the image is stale or frozen: no ring drawn
  bool stream_done = false;            // run --until-close: the stream ended; the window stays open

  // A multi-slice stream: slices 1.. beside slice 0, in columns.
  std::vector<SliceView> others;
  bool sync_slices = true;  // slice 0's window/level on every slice
  Rect slice_column(const Rect& area, int k) const;
  void make_slice_views();
  void sync_session_views();  // a column per MRD session that has made a frame; none after it ends
  void update_slices();
  // What the main view shows, said when other columns are beside it: "slice 0" or "ZeroMQ stream".
  std::string main_label() const;
  void draw_slices(const Rect& area, float sx, float sy, int fb_w, int fb_h);
  void overlay_slices(const Rect& area);

  Impl(StreamRuntime& pl, const ViewerOptions& o) : p(pl), opt(o) {}
  void upload_latest();
  void refresh_pixels();  // raw -> pixels (orientation), upload, window preset, tip
  void handle_mouse(const Rect& area);
  void handle_keys();
  void panels(const Rect& area);
  void overlay(const Rect& area);
  void snapshot();
  void toggle_record();
  void toggle_fullscreen();
  void toggle_clinical();
  void apply_recon();
  void write_screenshot(const std::string& path, int fb_w, int fb_h, const Rect& area);

  // ViewerControls: what a driver may do, through the user's code paths.
  void move_window_slider(int window) override;
  std::string apply_backend(const std::string& backend) override;
  bool frame_shown() const override {  // on the main view, or in a column (an MRD session's)
    return shown != nullptr ||
           std::any_of(others.begin(), others.end(), [](const SliceView& v) { return v.shown; });
  }
  void request_screenshot(const std::string& path) override { pending_screenshot = path; }
  void close() override;
  // Follows the source's preparation (opt.waiting_note): the script clock waits for it.
  void follow_preparation();
};

}  // namespace radstream::viewer
