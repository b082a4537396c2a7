// The viewer in a real window under Xvfb (Mesa's software OpenGL): `radstream demo` on a simulated stream,
// the framebuffer read back into a PNG (kept as the README's screenshot), and checked: the image area
// correlates with the offline reconstruction of the frame shown, the panels are drawn, a control change (the
// window slider) reached the pipeline, and the program exits cleanly when the window is closed. Skips when
// xvfb-run is missing; RADSTREAM_REQUIRE_DISPLAY=1 makes that a failure (CI sets it).
#include <gtest/gtest.h>

#include <stb_image.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <future>
#include <thread>

#include "core/key_names.hpp"
#include "gpu/cuda_runtime.hpp"
#include "io/frame_io.hpp"
#include "recon/recon_chain.hpp"
#include "sim/simulator.hpp"
#include "test_util.hpp"

using namespace radstream;

namespace {

double json_number(const std::string& json, const std::string& key, int index = 0) {
  const auto j = nlohmann::json::parse(json, nullptr, false);
  if (j.is_discarded() || !j.contains(key)) return NAN;
  const auto& v = j.at(key);
  if (v.is_array()) return index < int(v.size()) ? v.at(std::size_t(index)).get<double>() : NAN;
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return index == 0 && v.is_number() ? v.get<double>() : NAN;
}

// The share of pixels in [x0, x1) x [y0, y1) that pass `keep`.
template <class F>
double share(const unsigned char* px, int w, int h, int x0, int y0, int x1, int y1, F keep) {
  long hit = 0, all = 0;
  for (int y = std::max(0, y0); y < std::min(h, y1); ++y)
    for (int x = std::max(0, x0); x < std::min(w, x1); ++x, ++all)
      hit += keep(px + (std::size_t(y) * w + x) * 3);
  return all ? double(hit) / double(all) : 0.0;
}

// The share of the LIVE/DELAYED marker's box (the screenshot JSON's live_marker_rect) in the colour of
// `state`: green for live, amber for delayed.
double marker_share(const unsigned char* px, int w, int h, const nlohmann::json& j,
                    const std::string& state) {
  const auto& m = j.at("live_marker_rect");
  const int x0 = int(m[0].get<double>()), y0 = int(m[1].get<double>());
  const int x1 = x0 + int(m[2].get<double>()), y1 = y0 + int(m[3].get<double>());
  if (state == "live")
    return share(px, w, h, x0, y0, x1, y1,
                 [](const unsigned char* q) { return q[1] > 110 && q[0] < 60 && q[2] < 60; });
  return share(px, w, h, x0, y0, x1, y1,
               [](const unsigned char* q) { return q[0] > 200 && q[1] >= 120 && q[1] <= 200 && q[2] < 80; });
}

bool have_xvfb() {
  return test::run_command("command -v xvfb-run").exit_code == 0;
}

// Skips the test where xvfb-run is missing, unless RADSTREAM_REQUIRE_DISPLAY=1 (CI) makes that a failure.
#define SKIP_WITHOUT_XVFB()                                                                                 \
  do {                                                                                                      \
    if (!have_xvfb()) {                                                                                     \
      if (test::env_flag("RADSTREAM_REQUIRE_DISPLAY")) FAIL() << "xvfb-run is not installed";               \
      GTEST_SKIP()                                                                                          \
          << "xvfb-run is not installed (apt-get install xvfb); RADSTREAM_REQUIRE_DISPLAY=1 fails instead"; \
    }                                                                                                       \
  } while (0)

}  // namespace

TEST(Viewer, UnderXvfbShowsTheReconstructionPanelsAndControls) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string shot = (std::filesystem::path(RADSTREAM_ARTIFACT_DIR) / "viewer_screenshot.png").string();
  const auto r =
      test::run_command("xvfb-run -a -s '-screen 0 1280x1024x24' " + test::radstream_binary() +
                        " demo --backend cpu --matrix 128 --coils 4 --rate 400 --pool 256 --window 64 "
                        "--stride 16 --set-window 96 --stale-after 30"
                        " --screenshot " +
                        shot + " --screenshot-after 3 --close-after 4.5 --out-dir " + dir / "demo");
  // (d) a clean exit after the window was closed.
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("viewer: closed"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "demo/metrics.json"));
  std::ifstream jf(shot + ".json");
  const std::string json((std::istreambuf_iterator<char>(jf)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(json.empty()) << r.output;
  // The reconstruction panel offers the keys of the method and backend in use only (gridding on the CPU).
  const auto keys = nlohmann::json::parse(json).at("recon_keys").get<std::vector<std::string>>();
  const auto has = [&](const std::string& key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  ReconParams defaults;
  KeyNames grid, others;
  defaults.gridding.visit(grid);
  defaults.nlinv.visit(others);
  defaults.cg.visit(others);
  defaults.fbp.visit(others);
  for (const auto& k : grid.keys) EXPECT_TRUE(has(k)) << k;
  for (const auto& k : others.keys) EXPECT_FALSE(has(k)) << k << " is not a gridding key";
  EXPECT_TRUE(has("threads"));
  EXPECT_FALSE(has("cuda_graph"));
  // (c) the slider change reached the pipeline: the frame shown has the new window.
  EXPECT_EQ(json_number(json, "pipeline_window"), 96);
  EXPECT_EQ(json_number(json, "window"), 96);
  // (a) the image area against the offline reconstruction of the same spokes.
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr);
  const int first = int(json_number(json, "first_spoke")), last = int(json_number(json, "last_spoke"));
  const int n = int(json_number(json, "matrix"));
  ASSERT_EQ(last - first + 1, 96);
  SimParams sp;
  sp.matrix = 128;
  sp.coils = 4;
  sp.snr = 40;
  sp.rate_hz = 400;
  sp.motion = true;
  sp.motion_period_s = 256.0 / 400.0;
  const Simulator sim(sp);
  std::vector<Spoke> spokes;
  for (int k = first; k <= last; ++k) spokes.push_back(sim.spoke(std::uint64_t(k % 256)));
  const Frame f = frame_from_spokes(sim.header(), spokes);
  ReconParams rp;
  rp.backend = BackendChoice::Cpu;
  rp.fft.planner = FftPlanner::Estimate;
  ReconChain chain(rp, Backend::Cpu, default_registry());
  chain.configure(f.geometry);
  const auto img = chain.reconstruct(f);
  const double rx = json_number(json, "image_rect", 0), ry = json_number(json, "image_rect", 1);
  const double rw = json_number(json, "image_rect", 2), rh = json_number(json, "image_rect", 3);
  const double lo = json_number(json, "low"), hi = json_number(json, "high");
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  long count = 0;
  for (int y = int(ry) + 30; y < int(ry + rh) - 30 && y < h; ++y)  // skip the overlay text rows
    for (int x = int(rx); x < int(rx + rw) && x < w; ++x) {
      const int ix = std::min(n - 1, int((x + 0.5 - rx) / rw * n)),
                iy = std::min(n - 1, int((y + 0.5 - ry) / rh * n));
      const double v =
          std::clamp((double(img.data[std::size_t(iy) * n + ix].real()) - lo) / (hi - lo), 0.0, 1.0);
      const double s = px[(std::size_t(y) * w + x) * 3] / 255.0;
      sa += v, sb += s, saa += v * v, sbb += s * s, sab += v * s;
      ++count;
    }
  const double corr =
      (sab / count - sa / count * sb / count) /
      std::sqrt((saa / count - std::pow(sa / count, 2)) * (sbb / count - std::pow(sb / count, 2)));
  std::printf("viewer: image area vs offline reconstruction of spokes %d..%d: correlation %.4f\n", first,
              last, corr);
  EXPECT_GT(corr, 0.9);
  // (b) the panels are drawn: the panel column is far from the plain background.
  const int panel_x = int(json_number(json, "panel_x"));
  long drawn = 0, total = 0;
  for (int y = 0; y < h; ++y)
    for (int x = panel_x; x < w; ++x, ++total) {
      const unsigned char* p = px + (std::size_t(y) * w + x) * 3;
      if (std::abs(p[0] - 15) + std::abs(p[1] - 15) + std::abs(p[2] - 18) > 12) ++drawn;
    }
  // While frames flow, the marker at the image's top right: the green LIVE, or (a machine loaded by other
  // tests skips frames; issue 30) the amber DELAYED; drawn in the colour of the state the JSON gives.
  const auto state = nlohmann::json::parse(json).at("live_state").get<std::string>();
  EXPECT_TRUE(state == "live" || state == "delayed") << json;
  EXPECT_GT(marker_share(px, w, h, nlohmann::json::parse(json), state), 0.5) << state;
  EXPECT_EQ(json_number(json, "stale"), 0.0) << json;
  stbi_image_free(px);
  std::printf("viewer: %.1f %% of the panel column drawn\n", 100.0 * double(drawn) / double(total));
  EXPECT_GT(double(drawn) / double(total), 0.3);
}

TEST(Viewer, HeadlessDemoWritesSnapshotsAndMetrics) {
  test::TempDir dir;
  const auto r = test::run_command("env -u DISPLAY -u WAYLAND_DISPLAY " + test::radstream_binary() +
                                   " demo --backend cpu --matrix 64 --coils 2 --frames 12 --snapshot-every 4"
                                   " --window 48 --pool 128 --rate 800 --out-dir " +
                                   dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("running headless"), std::string::npos) << r.output;
  for (const char* f : {"frame_000004.png", "frame_000008.png", "frame_000012.png", "metrics.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "demo" / f)) << f;
}

// `radstream run` with a display opens the viewer. With --until-close the window stays open after the sender
// closes its stream: the last image stays on screen under STREAM ENDED until the user closes the window (here
// the script, at 6.5 s); the screenshot 6 s after start, well over 2 s after the stream's last spoke, says
// so.
TEST(Viewer, RunUntilCloseKeepsTheWindowOpenOnStreamEndedUntilItIsClosed) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string bin = test::radstream_binary(), shot = dir / "ended.png";
  auto run = std::async(std::launch::async, [&] {
    return test::run_command("xvfb-run -a -s '-screen 0 1280x1024x24' " + bin +
                             " run --endpoint tcp://127.0.0.1:26230 --backend cpu --window 64 --until-close"
                             " --duration 40 --record " +
                             dir / "rec.h5" + " --screenshot " + shot +
                             " --screenshot-after 6 --close-after 6.5 --metrics-json " + dir / "m.json");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the X server and the window start
  const auto sim = test::run_command(bin +
                                     " simulate --endpoint tcp://127.0.0.1:26230 --matrix 64 --coils 2"
                                     " --rate 400 --spokes 300");
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  const auto r = run.get();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("viewer: closed"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("spokes=300"), std::string::npos) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir / "m.json"));
  EXPECT_NE(r.output.find("viewer: the stream ended"), std::string::npos) << r.output;
  std::ifstream jf(shot + ".json");
  ASSERT_TRUE(jf.good()) << "no screenshot: the window closed before 6 s\n" << r.output;
  const auto j = nlohmann::json::parse(jf);
  EXPECT_EQ(j.at("message"), "STREAM ENDED") << j.dump();
  EXPECT_EQ(j.at("live_state"), "stale") << j.dump();
  EXPECT_GE(j.at("age_s").get<double>(), 2.0) << "the window was open 2 s after the last spoke";
  // Recording: a red REC on the image, and the recording's summary said once.
  EXPECT_TRUE(j.at("recording").get<bool>());
  const auto& m = j.at("rec_marker_rect");
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr);
  const int x0 = int(m[0].get<double>()), y0 = int(m[1].get<double>());
  const double red = share(px, w, h, x0, y0, x0 + int(m[2].get<double>()), y0 + int(m[3].get<double>()),
                           [](const unsigned char* q) { return q[0] > 180 && q[1] < 60 && q[2] < 60; });
  stbi_image_free(px);
  EXPECT_GT(red, 0.5) << "the REC marker";
  std::size_t said = 0;
  for (std::size_t at = r.output.find("300 spokes in "); at != std::string::npos;
       at = r.output.find("300 spokes in ", at + 1))
    ++said;
  EXPECT_EQ(said, 1u) << r.output;
}

// A setting that cannot be had (the CUDA backend on a machine without a usable GPU), chosen in the viewer's
// reconstruction panel and applied, is refused with the reason shown in the panel; the program keeps running
// and reconstructing (it used to abort the process).
TEST(Viewer, UnusableBackendAppliedInThePanelIsRefusedAndTheRunGoesOn) {
  SKIP_WITHOUT_XVFB();
  if (gpu::query().available && gpu::cuda_stages_built()) GTEST_SKIP() << "a GPU is usable here";
  test::TempDir dir;
  const std::string shot = dir / "shot.png";
  const auto r =
      test::run_command("xvfb-run -a -s '-screen 0 1280x1024x24' " + test::radstream_binary() +
                        " demo --backend cpu --matrix 64 --coils 2 --rate 400 --pool 256 --window 32"
                        " --stride 16 --apply-backend cuda --screenshot " +
                        shot + " --screenshot-after 3 --close-after 3.5 --out-dir " + dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("viewer: apply backend cuda"), std::string::npos) << r.output;
  std::ifstream jf(shot + ".json");
  const auto j = nlohmann::json::parse(jf);
  const std::string message = j.at("message");
  EXPECT_NE(message.find("cuda"), std::string::npos) << message;
  EXPECT_NE(message.find("no GPU"), std::string::npos) << message;
  EXPECT_EQ(j.at("backend"), "cpu");
  // Frames kept coming after the refusal (1.5 s): at 400 spokes/s and a frame every 16, ~37 by 3 s.
  EXPECT_GT(j.at("frame").get<int>(), 30) << j.dump();
}

// An image that stops being renewed is never shown as live. The simulator goes quiet at 2 s; at
// 4 s the frame on screen is about 2 s old, past its 1 s limit: the image is dimmed under a red "NO NEW DATA"
// banner (read back from the framebuffer), and the screenshot's JSON says stale. While frames flow (the test
// above), a green LIVE marker with the frame's latency sits on the image instead.
TEST(Viewer, AnImageThatStopsBeingRenewedIsDimmedUnderANoNewDataBanner) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string shot = (std::filesystem::path(RADSTREAM_ARTIFACT_DIR) / "viewer_stale.png").string();
  const auto r =
      test::run_command("xvfb-run -a -s '-screen 0 1280x1024x24' " + test::radstream_binary() +
                        " demo --backend cpu --matrix 96 --coils 2 --rate 400 --pool 256 --window 64"
                        " --stride 16 --stop-sending-after 2 --stale-after 1 --screenshot " +
                        shot + " --screenshot-after 4 --close-after 4.5 --out-dir " + dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream jf(shot + ".json");
  const std::string json((std::istreambuf_iterator<char>(jf)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(json.empty()) << r.output;
  EXPECT_EQ(json_number(json, "stale"), 1.0) << json;
  EXPECT_GT(json_number(json, "age_s"), 1.0);
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr);
  const double rx = json_number(json, "image_rect", 0), ry = json_number(json, "image_rect", 1);
  const double rw = json_number(json, "image_rect", 2), rh = json_number(json, "image_rect", 3);
  // The banner: a band of strong red across the image near its middle.
  const int by = int(ry + rh * 0.45);
  long red = 0, banner = 0;
  for (int y = by + 2; y < by + 42 && y < h; ++y)
    for (int x = int(rx) + 2; x < int(rx + rw) - 2 && x < w; ++x, ++banner) {
      const unsigned char* p = px + (std::size_t(y) * w + x) * 3;
      if (p[0] > 150 && p[1] < 90 && p[2] < 90) ++red;
    }
  // The alert border: a red band along the image area's left edge (the area starts at x = 0).
  long border_red = 0, border = 0;
  for (int y = 100; y < h - 100; ++y)
    for (int x = 1; x < 8; ++x, ++border) {
      const unsigned char* p = px + (std::size_t(y) * w + x) * 3;
      if (p[0] > 150 && p[1] < 60 && p[2] < 60) ++border_red;
    }
  EXPECT_GT(double(border_red) / double(border), 0.6) << "the red alert border";
  // The rest of the image is dimmed: its 99th percentile below ~40 % (undimmed, the skull ring is white and
  // covers a few % of the image; the overlay's orientation labels, white on purpose, cover a fraction of 1
  // %).
  std::vector<int> values;
  for (int y = int(ry) + 30; y < int(ry + rh) - 30 && y < h; ++y) {
    if (y >= by - 2 && y < by + 46) continue;
    for (int x = int(rx); x < int(rx + rw) && x < w; ++x) {
      const unsigned char* p = px + (std::size_t(y) * w + x) * 3;
      values.push_back(int(p[1]));  // green: the grey image's level, not the red alert border around it
    }
  }
  stbi_image_free(px);
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(values.size() * 99 / 100), values.end());
  const int brightest = values.empty() ? 255 : values[values.size() * 99 / 100];
  std::printf("stale viewer: age %.2f s, banner %.0f %% red, image pixels' 99th percentile %d\n",
              json_number(json, "age_s"), 100.0 * double(red) / double(banner), brightest);
  EXPECT_GT(double(red) / double(banner), 0.6);
  EXPECT_LE(brightest, 110);
}

// The clinical display. Started with --clinical (key c), the image fills the screen with no
// panels, carries LIVE, its age and latency; the "object" preset and the tip marker are on, and the image is
// mirrored left-right (key h): the marker sits where the simulator put the tip at the middle of the frame's
// window, mirrored, and the edge labels say so.
TEST(Viewer, ClinicalDisplayShowsTheImageAloneWithTheTipMarkedAndMirrored) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string shot = (std::filesystem::path(RADSTREAM_ARTIFACT_DIR) / "viewer_clinical.png").string();
  const int n = 128, pool = 2048, rate = 400;
  const auto r =
      test::run_command("xvfb-run -a -s '-screen 0 1280x1024x24' " + test::radstream_binary() +
                        " demo --backend cpu --matrix 128 --coils 4 --rate 400 --pool 2048 --window 48 "
                        "--stride 16 --stale-after 30"
                        " --clinical --preset object --tip-marker --flip-x --screenshot " +
                        shot + " --screenshot-after 3 --close-after 3.5 --out-dir " + dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream jf(shot + ".json");
  const auto j = nlohmann::json::parse(jf);
  EXPECT_TRUE(j.at("clinical").get<bool>());
  EXPECT_FALSE(j.at("panels_shown").get<bool>());
  EXPECT_EQ(j.at("preset"), "object");
  EXPECT_EQ(j.at("edge_labels").at("right"), "-x");
  EXPECT_EQ(j.at("edge_labels").at("bottom"), "+y");
  const int w = j.at("fb")[0], h = j.at("fb")[1];
  EXPECT_EQ(w, 1280);  // the whole screen
  EXPECT_EQ(h, 1024);
  const double rx = j.at("image_rect")[0], ry = j.at("image_rect")[1], rw = j.at("image_rect")[2],
               rh = j.at("image_rect")[3];
  EXPECT_NEAR(rh, h, 1.0);  // the image as large as the screen allows
  int iw = 0, ih = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &iw, &ih, &ch, 3);
  ASSERT_NE(px, nullptr);
  // No panels: right of the image is plain background apart from the overlay's small text and scale bar.
  const double panel = share(px, iw, ih, int(rx + rw) + 2, 60, iw, ih - 60, [](const unsigned char* p) {
    return std::abs(p[0] - 15) + std::abs(p[1] - 15) + std::abs(p[2] - 18) > 12;
  });
  EXPECT_LT(panel, 0.05);
  // LIVE in green at the image's top right (or DELAYED in amber when this machine dropped frames).
  const auto state = j.at("live_state").get<std::string>();
  EXPECT_TRUE(state == "live" || state == "delayed") << j.dump();
  EXPECT_GT(marker_share(px, iw, ih, j, state), 0.5) << state;
  // The tip: where the simulator put it at the middle of the window (spoke k at k / rate s, the path's period
  // pool / rate), mirrored left-right, within 3 image pixels; the cyan ring drawn around that point.
  const double mid = 0.5 * (j.at("first_spoke").get<double>() + j.at("last_spoke").get<double>());
  const double wt = 2.0 * M_PI * std::fmod(mid, pool) / pool;
  const double tx = 0.3 * std::sin(wt), ty = 0.15 + 0.2 * std::sin(2.0 * wt);
  const double ex = (n - 1) - (tx * n / 2 + n / 2), ey = ty * n / 2 + n / 2;
  ASSERT_TRUE(j.at("tip").at("shown").get<bool>()) << j.dump();
  const double fx = j.at("tip").at("x"), fy = j.at("tip").at("y");
  std::printf(
      "clinical: tip found at (%.1f, %.1f), simulator (mirrored) (%.1f, %.1f); %.1f %% of the side drawn\n",
      fx, fy, ex, ey, 100 * panel);
  EXPECT_NEAR(fx, ex, 3.0);
  EXPECT_NEAR(fy, ey, 3.0);
  const double sx = rx + (fx + 0.5) / n * rw, sy = ry + (fy + 0.5) / n * rh, rad = std::max(12.0, rw * 0.035);
  const auto cyan = [](const unsigned char* p) { return p[2] > 200 && p[1] > 180 && p[0] < 80; };
  const double ring =
      share(px, iw, ih, int(sx - rad - 3), int(sy - rad - 3), int(sx + rad + 3), int(sy + rad + 3), cyan);
  EXPECT_GT(ring, 0.05) << "the tip ring around (" << sx << ", " << sy << ")";
  stbi_image_free(px);
  EXPECT_EQ(rate, 400);
}

// On a 1024 x 768 screen the window fits the screen, the image and the side panel are both
// shown, and the panel scrolls inside itself instead of running off the screen.
TEST(Viewer, ASmallScreenShowsEverythingAndThePanelScrolls) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string shot = dir / "small.png";
  const auto r =
      test::run_command("xvfb-run -a -s '-screen 0 1024x768x24' " + test::radstream_binary() +
                        " demo --backend cpu --matrix 64 --coils 2 --rate 400 --pool 256 --window 32"
                        " --stride 16 --screenshot " +
                        shot + " --screenshot-after 2.5 --close-after 3 --out-dir " + dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream jf(shot + ".json");
  const auto j = nlohmann::json::parse(jf);
  EXPECT_LE(j.at("fb")[0].get<int>(), 1024);
  EXPECT_LE(j.at("fb")[1].get<int>(), 768);
  const double rx = j.at("image_rect")[0], ry = j.at("image_rect")[1], rw = j.at("image_rect")[2],
               rh = j.at("image_rect")[3], panel_x = j.at("panel_x");
  EXPECT_GE(rx, 0.0);
  EXPECT_GE(ry, 0.0);
  EXPECT_LE(rx + rw, panel_x + 0.5);  // the image beside the panel, not under it
  EXPECT_LE(ry + rh, j.at("fb")[1].get<double>() + 0.5);
  EXPECT_GT(rw, 500.0);
  EXPECT_TRUE(j.at("panels_shown").get<bool>());
  EXPECT_GT(j.at("panel_scroll_max").get<double>(), 0.0)
      << "the panel's content is taller than 768 and scrolls";
  int iw = 0, ih = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &iw, &ih, &ch, 3);
  ASSERT_NE(px, nullptr);
  const double drawn = share(px, iw, ih, int(panel_x), 0, iw, ih, [](const unsigned char* p) {
    return std::abs(p[0] - 15) + std::abs(p[1] - 15) + std::abs(p[2] - 18) > 12;
  });
  stbi_image_free(px);
  EXPECT_GT(drawn, 0.3);
}

// Three slices side by side: each column shows its own plane of the phantom, routed by slice:
// slice 0's head outline stands upright, slice 1's (turned by 90 degrees) lies on its side, slice 2's stands
// again, smaller; each other slice's column is labelled with its frame.
TEST(Viewer, ThreeSlicesSideBySideEachShowsItsOwnPlane) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string shot = (std::filesystem::path(RADSTREAM_ARTIFACT_DIR) / "viewer_slices.png").string();
  const auto r =
      test::run_command("xvfb-run -a -s '-screen 0 1280x800x24' " + test::radstream_binary() +
                        " demo --backend cpu --slices 3 --matrix 128 --coils 4 --rate 600 --pool 384"
                        " --window 96 --stride 16 --stale-after 30 --screenshot " +
                        shot + " --screenshot-after 3 --close-after 4 --out-dir " + dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr);
  std::ifstream jf(shot + ".json");
  const std::string json((std::istreambuf_iterator<char>(jf)), std::istreambuf_iterator<char>());
  // Slice 0's image rectangle; the others have the same rows in their own columns. 30 px margins keep the
  // edge labels and the LIVE marker out.
  const int ry = int(json_number(json, "image_rect", 1)), rh = int(json_number(json, "image_rect", 3));
  ASSERT_GT(rh, 100) << json;
  const int area_w = w - 390;  // the side panel's width (viewer_state.hpp kPanelWidth)
  for (int k = 0; k < 3; ++k) {
    // The bright rim's bounding box in column k.
    const int x0 = area_w * k / 3 + 30, x1 = area_w * (k + 1) / 3 - 30;
    int bx0 = w, bx1 = -1, by0 = h, by1 = -1;
    for (int y = std::max(0, ry + 30); y < std::min(h, ry + rh - 30); ++y)
      for (int x = x0; x < x1; ++x)
        if (px[(std::size_t(y) * w + x) * 3] > 170 && px[(std::size_t(y) * w + x) * 3 + 2] > 170) {
          bx0 = std::min(bx0, x), bx1 = std::max(bx1, x), by0 = std::min(by0, y), by1 = std::max(by1, y);
        }
    const int bw = bx1 - bx0, bh = by1 - by0;
    std::printf("slice %d: outline %d x %d px\n", k, bw, bh);
    ASSERT_GT(bw, 40) << "slice " << k << " shows no image";
    ASSERT_GT(bh, 40) << "slice " << k << " shows no image";
    if (k == 1)
      EXPECT_GT(bw, bh) << "slice 1 (turned by 90 degrees) should lie on its side";
    else
      EXPECT_GT(bh, bw) << "slice " << k << " should stand upright";
  }
  stbi_image_free(px);
  std::ifstream mf(dir / "demo/metrics.json");
  const auto m = nlohmann::json::parse(mf);
  ASSERT_EQ(m["slices"].size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_GT(m["slices"][k]["frames"].get<int>(), 3) << k;
}

// A stack of stars in three planes: with the tip marker on, the cursor follows the tip in 3D, and the axial
// (main view), coronal and sagittal (the columns beside it) planes through it each show the tip where the
// simulator put it (its path slowed to stand still here) and ring it: in each column a small box at the tip's
// place is brighter than the ring of pixels around it, and the marker's cyan ring is drawn about it.
TEST(Viewer, AVolumeIsShownInThreePlanesThroughTheTip) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string shot = (std::filesystem::path(RADSTREAM_ARTIFACT_DIR) / "viewer_volume.png").string();
  const auto r = test::run_command(
      "xvfb-run -a -s '-screen 0 1280x800x24' " + test::radstream_binary() +
      " demo --backend cpu --partitions 16 --matrix 64 --coils 4 --rate 3200 --pool 1024"
      " --motion-period-s 3600 --window 64 --stride 32 --tip-marker --stale-after 30 --screenshot " +
      shot + " --screenshot-after 3 --close-after 4 --out-dir " + dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr);
  std::ifstream jf(shot + ".json");
  const std::string json((std::istreambuf_iterator<char>(jf)), std::istreambuf_iterator<char>());
  const double rx = json_number(json, "image_rect", 0), ry = json_number(json, "image_rect", 1),
               rw = json_number(json, "image_rect", 2), rh = json_number(json, "image_rect", 3);
  ASSERT_GT(rh, 100) << json;
  const int area_w = w - 390;  // the side panel's width (viewer_state.hpp kPanelWidth)
  // The tip at t = 0: (0, 0.15, 0.3) in the field of view [-1, 1]^3 -> fractions of each plane's width and
  // height: axial (x, y), coronal (x, z), sagittal (y, z).
  const double fx = 0.5, fy = 0.575, fz = 0.65;
  const double where[3][2] = {{fx, fy}, {fx, fz}, {fy, fz}};
  const auto grey = [&](int x, int y) {
    const unsigned char* q = px + (std::size_t(y) * w + x) * 3;
    return (q[0] + q[1] + q[2]) / 3.0;
  };
  for (int k = 0; k < 3; ++k) {
    const int cx = int(rx + double(area_w) * k / 3 + where[k][0] * rw), cy = int(ry + where[k][1] * rh);
    const int inner = std::max(2, int(rw / 64)), outer = 4 * inner;
    double in = 0, around = 0;
    int n_in = 0, n_around = 0;
    for (int y = cy - outer; y <= cy + outer; ++y)
      for (int x = cx - outer; x <= cx + outer; ++x) {
        if (x < 0 || y < 0 || x >= w || y >= h) continue;
        const int d = std::max(std::abs(x - cx), std::abs(y - cy));
        if (d <= inner) in += grey(x, y), ++n_in;
        if (d >= outer - inner) around += grey(x, y), ++n_around;
      }
    in /= std::max(1, n_in);
    around /= std::max(1, n_around);
    // The tip's ring (cyan) about the same place, in every plane.
    const double ring = share(px, w, h, cx - 3 * outer, cy - 3 * outer, cx + 3 * outer, cy + 3 * outer,
                              [](const unsigned char* q) { return q[0] < 60 && q[1] > 180 && q[2] > 200; });
    std::printf("plane %d: the tip's box %.0f, around it %.0f (grey levels); ring pixels %.3f\n", k, in,
                around, ring);
    EXPECT_GT(in, around + 50) << "plane " << k << " does not show the tip where the simulator put it";
    EXPECT_GT(ring, 0.01) << "plane " << k << " does not ring the tip";
  }
  stbi_image_free(px);
}

// LIVE means live. A pipeline that cannot keep up (each frame held 250 ms by the test hook, at 400 spokes/s
// and a frame due every 16 spokes: 40 ms) drops frames; the marker on the image (clinical display) is an
// amber DELAYED with the latency and the frames dropped in the last 10 s, never the green LIVE, and the
// freshness limit stays at three nominal frame intervals (>= 0.3 s), not three of the slow shown ones. The
// same display with frames made in time (100 spokes/s, no delay) is LIVE and green.
TEST(Viewer, APipelineBehindShowsAnAmberDelayedMarkerNeverAGreenLive) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const auto shoot = [&](const std::string& name, const std::string& env, int rate) {
    const std::string shot = dir / (name + ".png");
    const auto r = test::run_command(
        env + " xvfb-run -a -s '-screen 0 1280x1024x24' " + test::radstream_binary() +
        " demo --clinical --backend cpu --matrix 64 --coils 2 --pool 256 --window 32 --stride 16 --rate " +
        std::to_string(rate) + " --screenshot " + shot +
        " --screenshot-after 4 --close-after 4.5 --out-dir " + dir / name);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream jf(shot + ".json");
    const auto j = nlohmann::json::parse(jf, nullptr, false);
    int w = 0, h = 0, ch = 0;
    unsigned char* px = stbi_load(shot.c_str(), &w, &h, &ch, 3);
    double amber = 0, green = 0;
    if (px && !j.is_discarded()) {
      const auto& m = j.at("live_marker_rect");
      const int x0 = int(m[0].get<double>()), y0 = int(m[1].get<double>());
      const int x1 = x0 + int(m[2].get<double>()), y1 = y0 + int(m[3].get<double>());
      amber = share(px, w, h, x0, y0, x1, y1, [](const unsigned char* q) {
        return q[0] > 200 && q[1] >= 120 && q[1] <= 200 && q[2] < 80;
      });
      green = share(px, w, h, x0, y0, x1, y1,
                    [](const unsigned char* q) { return q[1] > 110 && q[0] < 60 && q[2] < 60; });
    }
    if (px) stbi_image_free(px);
    std::printf(
        "%s: %s, %s of %s frames dropped in 10 s, latency %.0f ms, limit %.2f s; marker %.0f %% amber, "
        "%.0f %% green\n",
        name.c_str(), j.value("live_state", std::string("?")).c_str(),
        j.value("frames_skipped", nlohmann::json(0)).dump().c_str(),
        j.value("frames_due", nlohmann::json(0)).dump().c_str(), j.value("shown_glass_ms", -1.0),
        j.value("stale_after_s", -1.0), 100 * amber, 100 * green);
    return std::tuple{j, amber, green};
  };
  const auto [behind, behind_amber, behind_green] = shoot("behind", "RADSTREAM_TEST_FRAME_DELAY_MS=250", 400);
  ASSERT_FALSE(behind.is_discarded());
  EXPECT_LE(behind.at("stale_after_s").get<double>(), 0.3 + 1e-6);
  EXPECT_GT(behind.at("frames_skipped").get<int>(), 0);
  EXPECT_EQ(behind.at("live_state"), "delayed") << behind.dump();
  EXPECT_GT(behind_amber, 0.5);
  EXPECT_EQ(behind_green, 0.0);
  const auto [live, live_amber, live_green] = shoot("live", "", 100);
  ASSERT_FALSE(live.is_discarded());
  EXPECT_EQ(live.at("frames_skipped").get<int>(), 0);
  EXPECT_EQ(live.at("live_state"), "live") << live.dump();
  EXPECT_GT(live_green, 0.5);
  EXPECT_EQ(live_amber, 0.0);
}

namespace {

// Where the demo's simulator put the tip at the middle of a frame's window: spoke k at k / rate s on a path
// whose period is the pool (pool / rate s), in the pixels of an n x n image shown unturned.
std::pair<double, double> simulated_tip(const nlohmann::json& j, int n, int pool) {
  const double mid = 0.5 * (j.at("first_spoke").get<double>() + j.at("last_spoke").get<double>());
  const double wt = 2.0 * M_PI * std::fmod(mid, pool) / pool;
  return {0.3 * std::sin(wt) * n / 2 + n / 2, (0.15 + 0.2 * std::sin(2.0 * wt)) * n / 2 + n / 2};
}

}  // namespace

// The tip marker at the README's command (demo --clinical --preset object --tip-marker: 192^2, 8 coils, a
// 128-spoke window, SNR 40, 400 spokes/s, the tip's 10 s path), on the CPU: of 10 screenshots 0.4 s apart at
// least 9 ring the tip, each within 3 pixels of where the simulator put it. With SNR 2 nothing stands out:
// the display says "tip: not found" where the ring would be (its cyan letters read back).
TEST(Viewer, TheTipMarkerRingsTheTipAtTheReadmesSettingsOrSaysItIsNotFound) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const int n = 192, pool = 4096;
  const auto r = test::run_command(
      "xvfb-run -a -s '-screen 0 1280x1024x24' " + test::radstream_binary() +
      " demo --clinical --preset object --tip-marker --backend cpu --screenshot " + dir / "tip.png" +
      " --screenshots 10 --screenshot-every 0.4 --screenshot-after 2"
      " --close-after 6.5 --out-dir " +
      dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int ringed = 0;
  for (int k = 0; k < 10; ++k) {
    std::ifstream jf(dir / ("tip_" + std::to_string(k) + ".png.json"));
    ASSERT_TRUE(jf.good()) << k << "\n" << r.output;
    const auto j = nlohmann::json::parse(jf);
    EXPECT_EQ(j.at("matrix"), n);
    const auto [ex, ey] = simulated_tip(j, n, pool);
    const auto& t = j.at("tip");
    const double d = std::hypot(t.at("x").get<double>() - ex, t.at("y").get<double>() - ey);
    const bool shown = t.at("shown").get<bool>();
    ringed += shown && d <= 3.0;
    std::printf(
        "tip %d: frame %d, %s at (%.1f, %.1f), simulator (%.1f, %.1f), %.1f px; contrast %.3f of %.3f\n", k,
        j.at("frame").get<int>(), shown ? "ringed" : "not found", t.at("x").get<double>(),
        t.at("y").get<double>(), ex, ey, d, t.at("contrast").get<double>(), t.at("threshold").get<double>());
    if (shown) {
      EXPECT_LE(d, 3.0) << "a ring away from the tip";
    }
  }
  EXPECT_GE(ringed, 9);
  // SNR 2: no tip stands out of the noise, and the display says so.
  const std::string shot = dir / "noisy.png";
  const auto q =
      test::run_command("xvfb-run -a -s '-screen 0 1280x1024x24' " + test::radstream_binary() +
                        " demo --clinical --preset object --tip-marker --backend cpu --snr 2"
                        " --pool 1024 --screenshot " +
                        shot + " --screenshot-after 2 --close-after 2.5 --out-dir " + dir / "noisy");
  ASSERT_EQ(q.exit_code, 0) << q.output;
  std::ifstream jf(shot + ".json");
  const auto j = nlohmann::json::parse(jf);
  EXPECT_FALSE(j.at("tip").at("shown").get<bool>()) << j.dump();
  const auto& rect = j.at("tip").at("not_found_rect");
  ASSERT_GT(rect[2].get<double>(), 50.0) << "no \"tip: not found\" drawn";
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr);
  const int x0 = int(rect[0].get<double>()), y0 = int(rect[1].get<double>());
  const double cyan =
      share(px, w, h, x0, y0, x0 + int(rect[2].get<double>()), y0 + int(rect[3].get<double>()),
            [](const unsigned char* c) { return c[2] > 200 && c[1] > 180 && c[0] < 80; });
  stbi_image_free(px);
  std::printf("snr 2: tip not found (contrast %.3f of %.3f); the text's box %.0f %% cyan letters\n",
              j.at("tip").at("contrast").get<double>(), j.at("tip").at("threshold").get<double>(),
              100 * cyan);
  EXPECT_GT(cyan, 0.03);
}

// Once the stream has ended the image is not live, and the tip's ring (bright cyan, which reads as "the tip
// is here now") is no longer drawn at its last position: the JSON says shown false while the banner says
// STREAM ENDED. A simulated scanner streams 3 s into `run`.
TEST(Viewer, AStaleImageKeepsNoTipRing) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const auto r = test::run_command(
      "(xvfb-run -a -s '-screen 0 1280x1024x24' " + bin +
      " run --endpoint tcp://127.0.0.1:26310 --backend cpu --clinical --preset object --tip-marker --window "
      "64"
      " --stride 16 --screenshot " +
      dir / "end.png" +
      " --screenshots 2 --screenshot-after 2.5 --screenshot-every 5 --close-after 9 & pid=$!; sleep 1; " +
      bin +
      " simulate --endpoint tcp://127.0.0.1:26310 --matrix 128 --coils 4 --rate 400 --duration 3 --motion; "
      "wait $pid)");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream live_json(dir / "end_0.png.json"), end_json(dir / "end_1.png.json");
  ASSERT_TRUE(live_json.good() && end_json.good()) << r.output;
  const auto live = nlohmann::json::parse(live_json), end = nlohmann::json::parse(end_json);
  std::printf("while streaming: stale %d, tip shown %d; after the end: stale %d, tip shown %d, hidden %d\n",
              live.at("stale").get<bool>(), live.at("tip").at("shown").get<bool>(),
              end.at("stale").get<bool>(), end.at("tip").at("shown").get<bool>(),
              end.at("tip").at("hidden_not_live").get<bool>());
  ASSERT_TRUE(end.at("stale").get<bool>()) << end.dump();
  EXPECT_FALSE(end.at("tip").at("shown").get<bool>()) << end.dump();
  // The pixels: the ring's cyan (0, 230, 255) is on the live screenshot when it was shown, nowhere on the
  // stale one (neither a ring nor "tip: not found", which is cyan too; whether the last image's tip was
  // found, hidden_not_live, depends on which frame came last).
  auto cyan_pixels = [](const std::string& png) {
    int w = 0, h = 0, ch = 0;
    unsigned char* px = stbi_load(png.c_str(), &w, &h, &ch, 3);
    if (!px) return -1;
    int n = 0;
    for (int i = 0; i < w * h; ++i) n += px[3 * i] < 40 && px[3 * i + 1] > 200 && px[3 * i + 2] > 230;
    stbi_image_free(px);
    return n;
  };
  const int live_cyan = cyan_pixels(dir / "end_0.png"), end_cyan = cyan_pixels(dir / "end_1.png");
  std::printf("cyan pixels: %d while streaming, %d after the end\n", live_cyan, end_cyan);
  if (live.at("tip").at("shown").get<bool>()) {
    EXPECT_GT(live_cyan, 50);
  }
  EXPECT_EQ(end_cyan, 0);
}

// The demo's window opens at once: while the simulated scanner precomputes its pool (seconds on a small
// machine) the window says so, instead of opening only after it; a script's clock (screenshots, close-after)
// starts when the scanner is ready, so the screenshot still shows the stream.
TEST(Viewer, TheDemoWindowOpensAtOnceAndSaysTheScannerIsBeingPrepared) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string shot = dir / "first.png";
  const auto r =
      test::run_command("xvfb-run -a -s '-screen 0 1280x1024x24' " + test::radstream_binary() +
                        " demo --backend cpu --matrix 128 --coils 4 --pool 2048 --screenshot " + shot +
                        " --screenshot-after-s 1 --close-after-s 1.5 --out-dir " + dir / "demo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto opened = r.output.find("viewer: the window is open; preparing the simulated scanner (");
  const auto pooled = r.output.find("2048 spokes precomputed in");
  ASSERT_NE(opened, std::string::npos) << r.output;
  ASSERT_NE(pooled, std::string::npos) << r.output;
  EXPECT_LT(opened, pooled) << r.output;  // the window came first
  std::ifstream jf(shot + ".json");
  ASSERT_TRUE(jf.good()) << r.output;
  const auto j = nlohmann::json::parse(jf);
  EXPECT_GT(j.at("matrix").get<int>(), 0) << r.output;  // the screenshot shows the stream, not the wait
}

// The viewer shows each MRD session beside the server's own stream: a column named after the session's client
// and config, with its image, while the main view says it is the ZeroMQ stream (nothing sent there: waiting).
TEST(Viewer, AnMrdSessionHasItsOwnColumnNamedAfterItsClientAndConfig) {
  SKIP_WITHOUT_XVFB();
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const auto sim = test::run_command(bin + " simulate --out " + (dir / "rec.h5") +
                                     " --spokes 4000 --matrix 64 --coils 2 --rate 400 --snr 30");
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const std::string shot = (std::filesystem::path(RADSTREAM_ARTIFACT_DIR) / "viewer_session.png").string();
  const auto r = test::run_command(
      "(xvfb-run -a -s '-screen 0 1280x800x24' " + bin +
      " run --backend cpu --endpoint tcp://127.0.0.1:26391 --mrd-listen tcp://127.0.0.1:26392 "
      "--mrd-config-dir " +
      std::string(RADSTREAM_CONFIG_DIR) + " --window 64 --stride 16 --images '' --screenshot " + shot +
      " --screenshot-after 4 --close-after 4.5 > " + (dir / "run.log") + " 2>&1 & pid=$!; sleep 1; " + bin +
      " replay " + (dir / "rec.h5") + " --mrd tcp://127.0.0.1:26392 --config gridding > " +
      (dir / "replay.log") + " 2>&1; wait $pid)");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream jf(shot + ".json");
  ASSERT_TRUE(jf.good()) << test::run_command("cat " + (dir / "run.log")).output;
  const auto j = nlohmann::json::parse(jf);
  EXPECT_EQ(j["main_label"], "ZeroMQ stream");
  ASSERT_EQ(j["columns"].size(), 1u) << j.dump();
  const std::string label = j["columns"][0]["label"];
  EXPECT_NE(label.find("session 1 (127.0.0.1): gridding"), std::string::npos) << label;
  EXPECT_GT(j["columns"][0]["frame"].get<int>(), 3);
  // The session's column (the right half of the image area) holds an image: the phantom's bright rim.
  int w = 0, h = 0, ch = 0;
  unsigned char* px = stbi_load(shot.c_str(), &w, &h, &ch, 3);
  ASSERT_NE(px, nullptr);
  const int area_w = w - 390;  // the side panel's width (viewer_state.hpp kPanelWidth)
  long bright_right = 0, bright_left = 0;
  for (int y = 120; y < h - 60; ++y)  // below the labels and the waiting text, above the bottom label
    for (int x = 30; x < area_w - 30; ++x) {
      const unsigned char* p = px + (std::size_t(y) * w + x) * 3;
      if (p[0] > 110 && p[1] > 110 && p[2] > 110) ++(x > area_w / 2 ? bright_right : bright_left);
    }
  stbi_image_free(px);
  EXPECT_GT(bright_right, 200) << "the session's column shows no image";
  EXPECT_GT(bright_right, 4 * bright_left) << "the ZeroMQ stream's view has no sender: no image there";
}
