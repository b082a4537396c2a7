// The display layer: orientation (transpose and flips with their edge labels),
// window presets (the "object" preset ignores the bright rim) and the tip finder, against the analytic
// phantom whose tip position is known, rasterized and reconstructed from simulated spokes.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "display/orientation.hpp"
#include "display/tip_finder.hpp"
#include "display/volume_planes.hpp"
#include "display/window_presets.hpp"
#include "io/frame_io.hpp"
#include "recon/recon_chain.hpp"
#include "sim/phantom.hpp"
#include "sim/simulator.hpp"

using namespace radstream;
using namespace radstream::display;

namespace {

// The pixel of field-of-view point (x, y): pixel i is centred at (i - n/2) 2/n.
double to_pixel(double v, int n) {
  return v * n / 2.0 + n / 2.0;
}

std::vector<float> phantom_with_tip(int n, double tx, double ty, double noise, unsigned seed) {
  auto e = modified_shepp_logan();
  e.push_back(catheter_tip(tx, ty));
  auto img = rasterize(e, n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.f, float(noise));
  for (float& v : img) v = std::abs(v + g(rng));
  return img;
}

}  // namespace

TEST(Display, EveryOrientationIsInvertibleAndLabelsItsEdges) {
  const int n = 5;
  std::vector<float> ramp(n * n);
  for (int i = 0; i < n * n; ++i) ramp[i] = float(i);
  for (int bits = 0; bits < 8; ++bits) {
    const Orientation o{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
    std::vector<float> shown;
    orient(ramp, n, o, shown);
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const Pixel s = source_of({x, y}, n, o);
        EXPECT_EQ(shown[y * n + x], ramp[s.y * n + s.x]);
        const Pixel back = screen_of(s, n, o);
        EXPECT_EQ(back.x, x);
        EXPECT_EQ(back.y, y);
      }
    // The label on the right edge names the axis that grows to the right on screen.
    const EdgeLabels e = edge_labels(o);
    const Pixel a = source_of({1, 2}, n, o), b = source_of({2, 2}, n, o);
    const int dx = b.x - a.x, dy = b.y - a.y;
    EXPECT_EQ(e.right, std::string(dx + dy > 0 ? "+" : "-") + (dx != 0 ? "x" : "y")) << describe(o);
    const Pixel c = source_of({1, 3}, n, o);
    EXPECT_EQ(e.bottom, std::string((c.x - a.x) + (c.y - a.y) > 0 ? "+" : "-") + (c.x != a.x ? "x" : "y"));
  }
  EXPECT_EQ(describe({}), "x right, y down");
  EXPECT_EQ(describe({true, false, false}), "y right, x down (transposed)");
  EXPECT_EQ(describe({false, true, true}), "x left, y up (flipped left-right, flipped up-down)");
}

// The bright skull ring sets white under "auto"; "object" spans the inside, where the phantom's values lie
// between 0 and 0.4 (modified Shepp-Logan: ring 1.0, brain 0.2, features 0.1-0.4).
TEST(Display, ObjectPresetIgnoresTheBrightRim) {
  const int n = 128;
  const auto img = phantom_with_tip(n, 0.0, 0.5, 0.0, 1);
  const WindowLevel a = preset_window(img, n, WindowPreset::Auto);
  const WindowLevel o = preset_window(img, n, WindowPreset::Object);
  const WindowLevel f = preset_window(img, n, WindowPreset::Full);
  std::printf("windows: auto %.3f..%.3f  object %.3f..%.3f  full %.3f..%.3f\n", a.low, a.high, o.low, o.high,
              f.low, f.high);
  EXPECT_GT(a.high, 0.9f);
  EXPECT_GT(o.high, 0.15f);
  EXPECT_LT(o.high, 0.45f);
  EXPECT_LT(o.low, o.high);
  EXPECT_NEAR(f.low, 0.f, 1e-6f);
  EXPECT_GE(f.high, 1.0f);  // ring 1.0; ring + tip overlap nowhere here, tip 0.8 + brain 0.2 = 1.0
  // The interior mask excludes the ring: no interior pixel is brighter than 0.45 except the tip's.
  const auto inside = object_interior(img, n);
  long in = 0, ring_inside = 0;
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x) {
      if (!inside[y * n + x]) continue;
      ++in;
      const double dx = x - to_pixel(0.0, n), dy = y - to_pixel(0.5, n);
      if (img[y * n + x] > 0.45f && std::hypot(dx, dy) > 4) ++ring_inside;
    }
  EXPECT_GT(in, n * n / 4);
  EXPECT_EQ(ring_inside, 0);
  // Degenerate images: zero and a constant give a valid window, never low >= high.
  for (WindowPreset p : {WindowPreset::Auto, WindowPreset::Object, WindowPreset::Full}) {
    const WindowLevel z = preset_window(std::vector<float>(n * n, 0.f), n, p);
    EXPECT_GT(z.high, z.low);
  }
}

TEST(Display, TipFinderLocatesTheCatheterTipInNoisyRasterizedPhantoms) {
  for (int n : {96, 128, 256})
    for (const auto& [tx, ty] :
         std::vector<std::pair<double, double>>{{0.0, 0.15}, {0.3, -0.05}, {-0.25, 0.35}}) {
      const auto img = phantom_with_tip(n, tx, ty, 0.02, unsigned(n + 10 * tx));
      const Tip t = find_tip(img, n);
      EXPECT_TRUE(t.found) << n << " " << tx << " " << ty;
      EXPECT_NEAR(t.x, to_pixel(tx, n) - 0.5, 1.0) << n << " " << tx;  // rasterize: centre (i - n/2) 2/n
      EXPECT_NEAR(t.y, to_pixel(ty, n) - 0.5, 1.0) << n << " " << ty;
    }
  // Without a tip the phantom's small features (0.1 above their background) are not taken for one.
  const int n = 128;
  auto img = rasterize(modified_shepp_logan(), n);
  const Tip none = find_tip(img, n);
  EXPECT_FALSE(none.found) << "contrast " << none.contrast << " threshold " << none.threshold;
}

// On a real gridding reconstruction from simulated spokes: the simulator's tip (nearly still over the window:
// a one-hour motion period) is at (0, 0.15) at t = 0.
TEST(Display, TipFinderLocatesTheTipInAGriddingReconstruction) {
  SimParams sp;
  sp.matrix = 128;
  sp.coils = 4;
  sp.snr = 30;
  sp.motion = true;
  sp.motion_period_s = 3600;
  const Simulator sim(sp);
  const Frame f = frame_from_spokes(sim.header(), sim.spokes(0, 201));
  ReconParams rp;
  rp.backend = BackendChoice::Cpu;
  rp.fft.planner = FftPlanner::Estimate;
  ReconChain chain(rp, Backend::Cpu, default_registry());
  chain.configure(f.geometry);
  const auto img = chain.reconstruct(f);
  std::vector<float> mag(std::size_t(sp.matrix) * sp.matrix);
  for (std::size_t i = 0; i < mag.size(); ++i) mag[i] = std::abs(img.data[i]);
  const Tip t = find_tip(mag, sp.matrix);
  std::printf("tip in the reconstruction: (%.2f, %.2f), contrast %.3g (threshold %.3g)\n", t.x, t.y,
              t.contrast, t.threshold);
  EXPECT_TRUE(t.found);
  EXPECT_NEAR(t.x, to_pixel(0.0, 128), 1.5);
  EXPECT_NEAR(t.y, to_pixel(0.15, 128), 1.5);
}

// At the demo's settings (192^2, 8 coils, SNR 40, 128-spoke windows of golden-angle spokes at 400 spokes/s,
// the tip's path repeating every 4096 spokes: up to 30 mm/s), the finder rings the moving tip in 9 of 10
// frames or more, within 3 pixels of where the simulator put it at the middle of the window; with no tip, or
// at SNR 2, nothing is taken for one. (At a 1024-spoke path the tip moved 20-35 pixels within one window and
// smeared below the threshold in every frame: the demo's README command showed no ring.)
TEST(Display, TipFinderRingsTheMovingTipAtTheDemosSettings) {
  const int n = 192, pool = 4096, W = 128;
  const auto run = [&](double snr, bool motion, int frames) {
    SimParams sp;
    sp.matrix = n;
    sp.coils = 8;
    sp.snr = snr;
    sp.rate_hz = 400;
    sp.motion = motion;
    sp.motion_period_s = pool / 400.0;
    const Simulator sim(sp);
    ReconParams rp;
    rp.backend = BackendChoice::Cpu;
    rp.fft.planner = FftPlanner::Estimate;
    ReconChain chain(rp, Backend::Cpu, default_registry());
    int found = 0, ringed = 0;
    for (int k = 0; k < frames; ++k) {
      const int first = k * pool / frames + 7;
      std::vector<Spoke> spokes;
      for (int i = first; i < first + W; ++i) spokes.push_back(sim.spoke(std::uint64_t(i % pool)));
      const Frame f = frame_from_spokes(sim.header(), spokes);
      chain.configure(f.geometry);
      const auto img = chain.reconstruct(f);
      std::vector<float> shown(std::size_t(n) * n);  // the viewer shows the real part
      for (std::size_t i = 0; i < shown.size(); ++i) shown[i] = img.data[i].real();
      const Tip t = find_tip(shown, n);
      const double wt = 2.0 * M_PI * std::fmod(first + 0.5 * (W - 1), pool) / pool;
      const double d =
          std::hypot(t.x - to_pixel(0.3 * std::sin(wt), n), t.y - to_pixel(0.15 + 0.2 * std::sin(2 * wt), n));
      found += t.found;
      ringed += t.found && d <= 3.0;
      std::printf("snr %g%s, frame at spoke %d: %s, contrast %.3f of %.3f, %.1f px from the tip\n", snr,
                  motion ? "" : " (no tip)", first, t.found ? "found" : "not found", t.contrast, t.threshold,
                  d);
    }
    return std::pair{found, ringed};
  };
  EXPECT_GE(run(40, true, 10).second, 9);
  EXPECT_EQ(run(40, false, 3).first, 0);
  EXPECT_EQ(run(2, true, 3).first, 0);
}

// A volume's three planes through a cursor: one bright voxel shows in each plane at its place (the coronal
// and sagittal planes stretched along z, n / depth rows a partition), nowhere when the cursor is elsewhere,
// and in every projection (MIP) wherever the cursor is.
TEST(Display, AVolumesThreePlanesShowAVoxelThroughTheCursorAndInTheirProjections) {
  const int n = 16, depth = 4, vx = 5, vy = 7, vz = 2;
  std::vector<float> vol(std::size_t(n) * n * depth, 0.f);
  vol[(std::size_t(vz) * n + vy) * n + vx] = 1.f;
  const auto lit = [](const std::vector<float>& p) {
    std::vector<int> at;
    for (std::size_t i = 0; i < p.size(); ++i)
      if (p[i] > 0.5f) at.push_back(int(i));
    return at;
  };
  std::vector<int> rows;  // the stretched rows of z = 2: 8..11
  for (int r = 0; r < n; ++r)
    if (r * depth / n == vz) rows.push_back(r);
  ASSERT_EQ(rows, (std::vector<int>{8, 9, 10, 11}));
  EXPECT_EQ(display::stretched_row(vz, n, depth), 10);
  std::vector<int> cor, sag;
  for (int r : rows) cor.push_back(r * n + vx), sag.push_back(r * n + vy);
  for (bool mip : {false, true}) {
    const auto p = display::volume_planes(vol, n, depth, {vx, vy, vz}, mip);
    EXPECT_EQ(lit(p.axial), std::vector<int>{vy * n + vx}) << mip;
    EXPECT_EQ(lit(p.coronal), cor) << mip;
    EXPECT_EQ(lit(p.sagittal), sag) << mip;
  }
  const auto away = display::volume_planes(vol, n, depth, {0, 0, 0}, false);
  EXPECT_TRUE(lit(away.axial).empty() && lit(away.coronal).empty() && lit(away.sagittal).empty());
  const auto mip = display::volume_planes(vol, n, depth, {0, 0, 0}, true);
  EXPECT_EQ(lit(mip.axial).size(), 1u);
  EXPECT_TRUE(display::volume_planes(std::vector<float>(10), n, depth, {}, false).axial.empty());
}
