// Multi-slice streams: three slices interleaved spoke by spoke through one pipeline make, slice
// by slice, the very frames three single-slice pipelines make from each slice's spokes alone; no spoke
// reaches another slice, none is lost over PUSH/PULL, the recording keeps each spoke's slice; a slice that
// fails stops only itself, visibly; a spoke of a slice the run does not take is rejected and counted.
#include <gtest/gtest.h>

#include <algorithm>

#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "stream_test_util.hpp"
#include "test_util.hpp"

using namespace radstream;
using namespace radstream::streamtest;

namespace {

constexpr int kSlices = 3, kPerSlice = 96;

SimParams three_slices() {
  SimParams sp;
  sp.matrix = 32;
  sp.coils = 2;
  sp.snr = 30;
  sp.slices = kSlices;
  return sp;
}

std::vector<std::vector<FrameResult>> by_slice(const std::vector<FrameResult>& frames, int slices) {
  std::vector<std::vector<FrameResult>> out{std::size_t(slices)};
  for (const auto& f : frames) out.at(std::size_t(f.slice)).push_back(f);
  for (auto& v : out)
    std::sort(v.begin(), v.end(),
              [](const FrameResult& a, const FrameResult& b) { return a.number < b.number; });
  return out;
}

}  // namespace

namespace {

// Three slices interleaved through one pipeline by `method` against three single-slice pipelines (ports
// port..port+3), frame for frame; with `record`, the recording keeps each spoke's slice.
void three_slices_make_three_single_slice_runs(ReconMethod method, int port, bool record) {
  const Simulator sim(three_slices());
  const std::vector<Spoke> spokes = sim.spokes(0, kSlices * kPerSlice);
  const std::string xml = stream_header_to_xml(sim.header());
  const int frames_per_slice = (kPerSlice - 32) / 16 + 1;
  test::TempDir dir;

  std::vector<std::vector<FrameResult>> multi;
  {
    RunConfig cfg = small_config(port, false);  // every frame, in order: comparable frame for frame
    cfg.stream.slices = kSlices;
    cfg.recon.method = method;
    if (record) cfg.sinks.record = dir / "three.h5";
    Rig rig(cfg, 41);
    rig.s.send_header(xml);
    for (const auto& s : spokes) rig.s.send_spoke(s.header, s);
    ASSERT_TRUE(eventually(
        [&] {
          for (int k = 0; k < kSlices; ++k)
            if (rig.p.metrics().slice(k).frames.load() < std::uint64_t(frames_per_slice)) return false;
          return true;
        },
        60s))
        << rig.p.report();
    rig.p.stop();
    const Metrics& m = rig.p.metrics();
    EXPECT_EQ(m.spokes.load(), std::uint64_t(kSlices * kPerSlice)) << "spokes lost over PUSH/PULL";
    EXPECT_EQ(m.missing.load(), 0u);
    EXPECT_EQ(m.rejected_total(), 0u);
    EXPECT_EQ(m.frames_failed.load(), 0u);
    multi = by_slice(rig.c.get(), kSlices);
  }
  if (record) {  // The recording keeps every spoke's slice.
    const MrdRecording rec = read_mrd(dir / "three.h5");
    ASSERT_EQ(rec.spokes.size(), spokes.size());
    for (std::size_t g = 0; g < rec.spokes.size(); ++g) {
      ASSERT_EQ(rec.spokes[g].header.slice, g % kSlices) << "recorded spoke " << g;
      ASSERT_EQ(rec.spokes[g].header.spoke_index, g / kSlices) << "recorded spoke " << g;
    }
  }

  for (int k = 0; k < kSlices; ++k) {
    RunConfig cfg = small_config(port + 1 + k, false);
    cfg.recon.method = method;
    Rig rig(cfg, 50 + k);
    rig.s.send_header(xml);
    for (const auto& s : spokes) {
      if (s.header.slice != k) continue;
      SpokeHeader h = s.header;
      h.slice = 0;  // a single-slice stream of this plane
      rig.s.send_spoke(h, s);
    }
    ASSERT_TRUE(rig.p.wait_frames(std::uint64_t(frames_per_slice), 60s)) << rig.p.report();
    rig.p.stop();
    const auto single = by_slice(rig.c.get(), 1)[0];
    ASSERT_EQ(multi[k].size(), single.size()) << "slice " << k;
    for (std::size_t i = 0; i < single.size(); ++i) {
      EXPECT_EQ(multi[k][i].first_spoke, single[i].first_spoke);
      EXPECT_EQ(multi[k][i].last_spoke, single[i].last_spoke);
      EXPECT_TRUE(multi[k][i].image == single[i].image) << "slice " << k << " frame " << i << " differs";
    }
  }
  // The planes differ: a spoke routed to the wrong slice could not go unnoticed above.
  EXPECT_GT(test::rel_error(multi[1][0].image, multi[0][0].image), 0.2);
}

}  // namespace

TEST(MultiSlice, ThreeSlicesMakeTheFramesOfThreeSingleSliceRuns) {
  three_slices_make_three_single_slice_runs(ReconMethod::Gridding, 27410, true);
}

// Three planes by NLINV (interventional guidance's 2-3 planes at once): each slice's worker keeps its own
// NLINV state (the previous frame's solution, the data scale), so the three planes interleaved in one stream
// make exactly the frames of three single-plane streams.
TEST(MultiSlice, ThreeNlinvPlanesMakeTheFramesOfThreeSinglePlaneRuns) {
  three_slices_make_three_single_slice_runs(ReconMethod::Nlinv, 27436, false);
}

TEST(MultiSlice, AFailingSliceStopsOnlyItselfVisibly) {
  const Simulator sim(three_slices());
  RunConfig cfg = small_config(27420, false);
  cfg.stream.slices = kSlices;
  Rig rig(cfg, 61);
  ReconParams broken = cfg.recon;
  broken.method = ReconMethod::CgSense;
  broken.cg.sens = "/nonexistent/maps.cfl";  // slice 1 only: its coil maps cannot be read
  rig.p.set_recon(broken, 1);
  EXPECT_THROW(rig.p.set_recon(broken, 3), ConfigError);
  rig.s.send_header(stream_header_to_xml(sim.header()));
  const std::vector<Spoke> spokes = sim.spokes(0, kSlices * kPerSlice);
  for (const auto& s : spokes) rig.s.send_spoke(s.header, s);
  SpokeHeader stray = spokes[0].header;
  stray.slice = 7;  // not one this run takes
  rig.s.send_spoke(stray, spokes[0]);
  ASSERT_TRUE(eventually(
      [&] {
        return rig.p.metrics().slice(0).frames.load() >= 5 && rig.p.metrics().slice(2).frames.load() >= 5 &&
               rig.p.metrics().slice(1).frames_failed.load() >= 1 &&
               rig.p.metrics().rejected[int(wire::Reject::SliceRange)].load() == 1;
      },
      60s))
      << rig.p.report();
  EXPECT_EQ(rig.p.metrics().slice(1).frames.load(), 0u);
  EXPECT_NE(rig.p.last_error(1).find("/nonexistent/maps"), std::string::npos) << rig.p.last_error(1);
  EXPECT_TRUE(rig.p.last_error(0).empty()) << rig.p.last_error(0);
  EXPECT_NE(rig.p.report().find("FAILED"), std::string::npos) << rig.p.report();
  const auto j = rig.p.metrics().to_json(1.0);
  EXPECT_EQ(j["slices"].size(), 3u);
  EXPECT_GT(j["slices"][1]["frames_failed"].get<int>(), 0);
  EXPECT_EQ(j["rejected"]["slice_range"], 1);
}
