// Changes while streaming: a new stream header with another geometry, window and stride changed between
// frames, one frame per rotation for linear streams; the image publisher; replay of an MRD file written by
// another tool (no radstream envelope in it).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <ismrmrd/ismrmrd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "gpu/cuda_runtime.hpp"
#include "ingest/protocols.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_raw.hpp"
#include "io/mrd_reader.hpp"
#include "recon/coil_map_source.hpp"
#include "recon/recon_chain.hpp"
#include "sim/simulator.hpp"
#include "stream/frame_gaps.hpp"
#include "stream/frame_result.hpp"
#include "stream/host_stall_probe.hpp"
#include "stream/slowest_frames.hpp"
#include "stream/spoke_ring.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "wire/sender.hpp"

using namespace radstream;
using namespace std::chrono_literals;

namespace {

using namespace radstream::streamtest;

RunConfig config(int port) {
  return small_config(port, false);
}

SimParams sim_params(int matrix, int coils, const char* angles = "golden") {
  SimParams s;
  s.matrix = matrix;
  s.coils = coils;
  s.angles = angles;
  s.spokes_per_rotation = 48;
  return s;
}

}  // namespace

TEST(StreamControl, HeaderChangeMidStreamReconfigures) {
  const RunConfig cfg = config(26201);
  Rig rig(cfg, 3);
  StreamRuntime& p = rig.p;
  Collector& c = rig.c;
  Sender& s = rig.s;
  const Simulator a(sim_params(32, 2)), b(sim_params(48, 4));
  s.send_header(stream_header_to_xml(a.header()));
  for (const auto& x : a.spokes(0, 48)) s.send_spoke(x);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 2; }));
  s.send_header(stream_header_to_xml(b.header()));
  for (const auto& x : b.spokes(0, 48)) s.send_spoke(x);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 4; }));
  p.stop();
  EXPECT_EQ(p.metrics().reconfigurations.load(), 1u);
  EXPECT_EQ(p.metrics().rejected_total(), 0u);
  const auto frames = c.get();
  EXPECT_EQ(frames.front().matrix, 32);
  EXPECT_EQ(frames.back().matrix, 48);
}

TEST(StreamControl, WindowAndStrideChangeBetweenFrames) {
  const RunConfig cfg = config(26202);
  Rig rig(cfg, 4);
  StreamRuntime& p = rig.p;
  Collector& c = rig.c;
  Sender& s = rig.s;
  const Simulator sim(sim_params(32, 2));
  const auto spokes = sim.spokes(0, 160);
  s.send_header(stream_header_to_xml(sim.header()));
  for (int i = 0; i < 64; ++i) s.send_spoke(spokes[i]);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 3; }));  // ends 32, 48, 64
  p.set_window(48);
  p.set_stride(8);
  EXPECT_THROW(p.set_window(65), ConfigError);  // beyond frames.max_window
  EXPECT_THROW(p.set_stride(0), ConfigError);
  for (int i = 64; i < 160; ++i) s.send_spoke(spokes[i]);
  ASSERT_TRUE(eventually(
      [&] { return p.metrics().spokes >= 160 && !c.get().empty() && c.get().back().end_serial >= 160; }));
  p.stop();
  const auto frames = c.get();
  ASSERT_GE(frames.size(), 6u);
  EXPECT_EQ(frames.front().window, 32);
  EXPECT_EQ(frames.back().window, 48);
  EXPECT_EQ(frames.back().last_spoke - frames.back().first_spoke + 1, 48u);
  EXPECT_EQ(frames[frames.size() - 1].end_serial - frames[frames.size() - 2].end_serial, 8u);
}

TEST(StreamControl, LinearStreamsFramePerRotation) {
  RunConfig cfg = config(26203);
  cfg.frames.framing = Framing::Rotation;
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  Collector c;
  c.attach(p);
  p.start();
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = cfg.stream.endpoint;
  Sender s(ctx, sp, 6);
  const Simulator sim(sim_params(32, 2, "linear180"));  // 48 spokes per rotation
  s.send_header(stream_header_to_xml(sim.header()));
  for (const auto& x : sim.spokes(0, 144)) s.send_spoke(x);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 3; }));
  p.stop();
  const auto frames = c.get();
  ASSERT_EQ(frames.size(), 3u);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].first_spoke, 48 * i);
    EXPECT_EQ(frames[i].last_spoke, 48 * i + 47);
  }
}

TEST(StreamControl, PublisherSendsEveryImageWithItsHeader) {
  RunConfig cfg = config(26204);
  cfg.sinks.publish = "tcp://127.0.0.1:26205";
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  Collector c;
  c.attach(p);
  zmq::context_t ctx(1);
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.set(zmq::sockopt::rcvtimeo, 5000);
  sub.connect(cfg.sinks.publish);
  std::this_thread::sleep_for(200ms);  // the subscription reaches the publisher
  p.start();
  SenderParams sp;
  sp.endpoint = cfg.stream.endpoint;
  Sender s(ctx, sp, 7);
  const Simulator sim(sim_params(32, 2));
  s.send_header(stream_header_to_xml(sim.header()));
  for (const auto& x : sim.spokes(0, 32)) s.send_spoke(x);
  zmq::message_t h, img;
  ASSERT_TRUE(sub.recv(h, zmq::recv_flags::none));
  ASSERT_TRUE(sub.get(zmq::sockopt::rcvmore));
  ASSERT_TRUE(sub.recv(img, zmq::recv_flags::none));
  p.stop();
  ASSERT_EQ(h.size(), 64u);
  std::uint32_t magic, n;
  std::uint64_t number;
  std::memcpy(&magic, h.data(), 4);
  std::memcpy(&number, static_cast<const char*>(h.data()) + 8, 8);
  std::memcpy(&n, static_cast<const char*>(h.data()) + 16, 4);
  EXPECT_EQ(magic, kImageMagic);
  EXPECT_EQ(number, 1u);
  EXPECT_EQ(n, 32u);
  ASSERT_EQ(img.size(), 32u * 32u * 4u);
  const auto frames = c.get();
  ASSERT_FALSE(frames.empty());
  std::vector<float> mag(32 * 32);
  std::memcpy(mag.data(), img.data(), img.size());
  for (std::size_t i = 0; i < mag.size(); ++i) ASSERT_EQ(mag[i], frames[0].image[i].real());
}

TEST(StreamControl, ReplayOfAFileWithoutEnvelopesPacedByRate) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const std::string file = dir / "foreign.h5";
  auto r =
      test::run_command(bin + " simulate --out " + (dir / "ours.h5") + " --spokes 96 --matrix 32 --coils 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  {  // another tool's file: the same acquisitions without radstream's envelope fields (user_int all 0)
    MrdReader in(dir / "ours.h5");
    MrdRawWriter out(file, in.xml());
    for (std::size_t i = 0; i < in.count(); ++i) {
      RawSpoke sp = in.read(i);
      ISMRMRD::ISMRMRD_AcquisitionHeader h;
      std::memcpy(&h, sp.acq_header.data(), sizeof h);
      for (auto& u : h.user_int) u = 0;
      std::memcpy(sp.acq_header.data(), &h, sizeof h);
      out.append(sp.acq_header, sp.traj, sp.data);
    }
  }
  RunConfig cfg = config(26206);
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  Collector c;
  c.attach(p);
  p.start();
  r = test::run_command(bin + " replay " + file + " --endpoint " + cfg.stream.endpoint + " --rate 2000");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("new envelopes"), std::string::npos) << r.output;
  ASSERT_TRUE(eventually([&] { return p.metrics().spokes >= 96 && p.metrics().frames >= 5; }));
  p.stop();
  EXPECT_EQ(p.metrics().missing.load(), 0u);
  // The frames are those of the file's spokes.
  const MrdRecording rec = read_mrd(file);
  ReconChain offline(cfg.recon, Backend::Cpu, reg);
  offline.configure(rec.header.geometry(32));
  for (const auto& f : c.get()) {
    const Frame ref = frame_from_spokes(rec.header, std::span(rec.spokes).subspan(f.first_spoke, 32));
    const auto img = offline.reconstruct(ref);
    double num = 0, den = 0;
    for (std::size_t i = 0; i < img.size(); ++i) {
      num += std::norm(std::complex<double>(f.image[i]) - std::complex<double>(img.data[i]));
      den += std::norm(std::complex<double>(img.data[i]));
    }
    EXPECT_LE(std::sqrt(num / den), 1e-6) << "frame " << f.number;
  }
}

// What the viewer's Apply button does: new reconstruction settings (here the method: FBP) take effect
// between frames, without a restart; the frames after the switch are FBP frames.
TEST(StreamControl, MethodSwitchToFbpBetweenFrames) {
  const RunConfig cfg = config(26207);
  Rig rig(cfg, 8);
  StreamRuntime& p = rig.p;
  Collector& c = rig.c;
  Sender& s = rig.s;
  const Registry& reg = rig.reg;
  const Simulator sim(sim_params(32, 2));
  const auto spokes = sim.spokes(0, 128);
  s.send_header(stream_header_to_xml(sim.header()));
  for (int i = 0; i < 48; ++i) s.send_spoke(spokes[i]);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 2; }));
  ReconParams fbp = p.recon();
  fbp.method = ReconMethod::Fbp;
  p.set_recon(fbp);
  ReconParams bad = fbp;
  bad.gridding.width = 3;
  EXPECT_THROW(p.set_recon(bad), ConfigError);  // refused; the running settings stay
  for (int i = 48; i < 128; ++i) s.send_spoke(spokes[i]);
  ASSERT_TRUE(eventually([&] { return !c.get().empty() && c.get().back().end_serial >= 128; }));
  p.stop();
  ReconChain grid(cfg.recon, Backend::Cpu, reg), back(fbp, Backend::Cpu, reg);
  grid.configure(sim.header().geometry(32));
  back.configure(sim.header().geometry(32));
  auto err = [](const std::vector<cfloat>& a, View<const cfloat> b) {
    return test::rel_error(a, std::vector<cfloat>(b.data, b.data + b.size()));
  };
  const auto frames = c.get();
  const auto& first = frames.front();
  const auto& last = frames.back();
  const Frame f0 = frame_from_spokes(sim.header(), std::span(spokes).subspan(first.first_spoke, 32));
  const Frame f1 = frame_from_spokes(sim.header(), std::span(spokes).subspan(last.first_spoke, 32));
  EXPECT_LE(err(first.image, grid.reconstruct(f0)), 1e-6);  // before: gridding
  EXPECT_LE(err(last.image, back.reconstruct(f1)), 1e-6);   // after: FBP
  EXPECT_GT(err(last.image, grid.reconstruct(f1)), 1e-3);   // and not gridding
}

// Settings are resolved when applied: asking for the CUDA backend where no GPU is usable is refused in the
// caller with a message naming the reason (it used to abort the reconstruction thread), and the stream goes
// on.
TEST(StreamControl, UnusableBackendIsRefusedWhenAppliedAndTheRunGoesOn) {
  if (gpu::query().available && gpu::cuda_stages_built()) GTEST_SKIP() << "a GPU is usable here";
  const RunConfig cfg = config(26208);
  Rig rig(cfg, 4);
  StreamRuntime& p = rig.p;
  Sender& s = rig.s;
  const Simulator sim(sim_params(32, 2));
  const auto spokes = sim.spokes(0, 96);
  s.send_header(stream_header_to_xml(sim.header()));
  for (int i = 0; i < 48; ++i) s.send_spoke(spokes[i]);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 2; }));
  ReconParams cuda = p.recon();
  cuda.backend = BackendChoice::Cuda;
  try {
    p.set_recon(cuda);
    FAIL() << "the cuda backend was accepted without a GPU";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
  EXPECT_EQ(p.recon().backend, cfg.recon.backend);
  const auto before = p.metrics().frames.load();
  for (int i = 48; i < 96; ++i) s.send_spoke(spokes[i]);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= before + 2; }));
  p.stop();
  EXPECT_EQ(p.metrics().frames_failed.load(), 0u);
}

// `run --until-close --no-skip` behind a slow reconstruction (one CPU thread, 192^2 x 8 coils, the stream
// sent at 4000 spokes/s) makes every frame due at the close before it stops: (400 - 64) / 16 + 1 = 22.
TEST(StreamControl, UntilCloseDrainsEveryDueFrameUnderASlowBackend) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const std::string ep = "tcp://127.0.0.1:26209";
  auto run = std::async(std::launch::async, [&] {
    return test::run_command(bin + " run --headless --endpoint " + ep +
                             " --backend cpu --threads 1 --window 64 --stride 16 --no-skip --until-close "
                             "--duration 120 --metrics-json " +
                             (dir / "m.json"));
  });
  std::this_thread::sleep_for(300ms);
  const auto sim = test::run_command(bin + " simulate --endpoint " + ep +
                                     " --matrix 192 --coils 8 --rate 4000 --spokes 400 --snr 30");
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  const auto r = run.get();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream j(dir / "m.json");
  const std::string json((std::istreambuf_iterator<char>(j)), std::istreambuf_iterator<char>());
  const auto m = nlohmann::json::parse(json);
  EXPECT_EQ(m.at("frames").get<int>(), 22) << json;
  EXPECT_EQ(m.at("frames_skipped").get<int>(), 0) << json;
  EXPECT_EQ(m.at("spokes").get<int>(), 400) << json;
}

// `run --until-close` stops once the runtime is drained: from the moment a new stream's spokes make a frame
// due until that frame is made, drained() must say no, also while the worker is still configuring for the
// new stream (a 256^2 x 8-coil chain with measured FFT plans; before, the worker's "nothing due" from before
// the header stood during that time, and a quick stream's run stopped before its first frame on a 16-core
// host).
TEST(StreamControl, NotDrainedFromANewStreamUntilItsDueFrameIsMade) {
  RunConfig cfg = config(26235);
  cfg.frames.skip_when_behind = false;
  cfg.recon.fft.planner = FftPlanner::Measure;
  Rig rig(cfg, 5);
  StreamRuntime& p = rig.p;
  const Simulator sim(sim_params(256, 8));
  ASSERT_TRUE(eventually([&] { return p.drained(); }));  // nothing received: nothing due
  rig.s.send_header(stream_header_to_xml(sim.header()));
  for (const auto& x : sim.spokes(0, cfg.frames.window)) rig.s.send_spoke(x);
  int violations = 0, samples = 0;
  const auto end = std::chrono::steady_clock::now() + 60s;
  while (p.metrics().frames.load() == 0 && std::chrono::steady_clock::now() < end) {
    const bool due = p.metrics().spokes.load() >= std::uint64_t(cfg.frames.window);
    const bool drained = p.drained();
    if (due && drained && p.metrics().frames.load() == 0)
      ++violations;  // frames counts before drained is set
    samples += due;
    std::this_thread::sleep_for(200us);
  }
  p.stop();
  std::printf("drained() sampled %d times with a frame due and none made: %d said drained\n", samples,
              violations);
  EXPECT_EQ(p.metrics().frames.load(), 1u);
  EXPECT_GT(samples, 0);
  EXPECT_EQ(violations, 0);
}

// Latency that tells the truth. The status line gives the pipeline's latency (arrived -> ready)
// and the sender's lag (acquired -> arrived) apart, over the last 10 s only, says BEHIND while frames are
// skipped, and fits 100 columns in the usual case; the JSON keeps the whole session and the sender's lag.
TEST(StreamControl, StatusLineSeparatesPipelineAndSenderLagOverTheLastTenSeconds) {
  Metrics m;
  const std::int64_t now = monotonic_ns();
  for (int i = 0; i < 50; ++i)  // sender 100 ms late, pipeline 2 ms
    m.add_frame_latency(now - 102'000'000, now - 2'000'000, now);
  const std::string line = m.line(1.0);
  std::printf("%s\n", line.c_str());
  EXPECT_NE(line.find("pipe=2.0/2.0ms"), std::string::npos) << line;
  EXPECT_NE(line.find("lag=100.0/100.0ms"), std::string::npos) << line;
  EXPECT_EQ(line.find("BEHIND"), std::string::npos) << line;
  EXPECT_LE(line.size(), 100u) << line;
  m.add_skipped(3);
  EXPECT_NE(m.line(2.0).find("BEHIND(3 skipped/10s)"), std::string::npos);
  // Older than the window: out of the recent figures, still in the session's.
  RecentSeries r(0.05);
  r.add(500.0, now);
  EXPECT_EQ(r.summary(now).count, 1u);
  EXPECT_EQ(r.summary(now + 100'000'000).count, 0u);
  const auto j = m.to_json(1.0);
  EXPECT_NEAR(j["latency_ms"]["sender_lag"]["p50"].get<double>(), 100.0, 1e-6);
  EXPECT_EQ(j["frames_skipped"].get<int>(), 3);
  // The glass latency appears, apart from the other two, once a viewer reports it.
  EXPECT_EQ(m.line(3.0).find("glass="), std::string::npos);
  for (int i = 0; i < 20; ++i) m.add_glass(16.0);
  const std::string with_glass = m.line(4.0);
  EXPECT_NE(with_glass.find("glass=16/16ms"), std::string::npos) << with_glass;
  EXPECT_NEAR(m.to_json(4.0)["latency_ms"]["acquired_to_glass"]["p50"].get<double>(), 16.0, 1e-6);
}

// A coil-map refresh on a GPU stream reads the band of samples it needs straight from the ring
// (SpokeRing::copy_window_band): the same samples in the same order as coil_map_band takes from the whole
// window's copy, and a refresh handed that band makes the maps that a refresh from the whole frame makes.
TEST(StreamControl, ACoilMapRefreshTakesItsBandFromTheRingAsFromTheWholeWindow) {
  const SimParams s = test::phantom_sim();
  const Simulator sim(s);
  const auto spokes = sim.spokes(0, 96);
  const int W = 48, S = int(spokes[0].samples);
  SpokeRing ring(128, S, s.coils, false);
  for (const Spoke& sp : spokes) {
    const SpokeRing::WriteSlot w = ring.begin_write();
    std::memcpy(w.traj, sp.traj.data(), sp.traj.size() * sizeof(float));
    std::memcpy(w.data, sp.data.data(), sp.data.size() * sizeof(cfloat));
    ring.commit(RingSlotInfo{});
  }
  ReconParams p;
  p.method = ReconMethod::CgSense;
  p.cg.iterations = 3;
  p.cg.maps_every = 2;
  const Registry reg = default_registry();
  ReconChain by_frame(p, Backend::Cpu, reg), by_band(p, Backend::Cpu, reg);
  Frame f0(sim.header().geometry(W)), f1(sim.header().geometry(W));
  SpokeRing::WindowTimes t;
  ASSERT_TRUE(ring.copy_window(W, f0, t));
  ASSERT_TRUE(ring.copy_window(W + 16, f1, t));
  CoilMapSource a(p, true), b(p, true);
  for (ReconChain* c : {&by_frame, &by_band}) c->configure(f0.geometry);
  ASSERT_TRUE(a.update(by_frame, f0));
  ASSERT_TRUE(b.update(by_band, f0));
  EXPECT_EQ(a.refresh_band(by_frame), coil_map_band_radius(s.matrix, CoilMapEstimate{}));
  ASSERT_GT(b.refresh_band(by_band), 0.0);

  CoilMapBand band;
  ASSERT_TRUE(ring.copy_window_band(W + 16, W, b.refresh_band(by_band), band));
  const CoilMapBand whole = coil_map_band(f1.data.view(), f1.traj.view(), s.matrix);
  ASSERT_EQ(band.data.size(), whole.data.size());
  ASSERT_EQ(band.traj.size(), whole.traj.size());
  EXPECT_GT(whole.traj.size(), 2u * 100);
  EXPECT_LT(whole.data.size(), f1.data.size());  // a band, not the whole window
  EXPECT_TRUE(std::equal(band.data.begin(), band.data.end(), whole.data.begin()));
  EXPECT_TRUE(std::equal(band.traj.begin(), band.traj.end(), whole.traj.begin()));

  EXPECT_FALSE(a.update(by_frame, &f1));
  EXPECT_FALSE(b.update(by_band, nullptr, &band));
  a.wait();
  b.wait();
  ASSERT_TRUE(a.update(by_frame, a.wants_frame(by_frame) ? &f1 : nullptr));
  ASSERT_TRUE(b.update(by_band, b.wants_frame(by_band) ? &f1 : nullptr));
  ASSERT_EQ(by_frame.coil_maps_version(), 2u);
  ASSERT_EQ(by_band.coil_maps_version(), 2u);
  const auto ma = by_frame.coil_maps(), mb = by_band.coil_maps();
  ASSERT_EQ(ma.size(), mb.size());
  EXPECT_LE(test::rel_error(std::vector<cfloat>(mb.data, mb.data + mb.size()),
                            std::vector<cfloat>(ma.data, ma.data + ma.size())),
            1e-6);
}

// Every frame wanted (frames.skip_when_behind false): the ring's writer waits rather than overwrite spokes of
// a frame still to be made, and a stopping run releases it.
TEST(StreamControl, AKeptWindowHoldsTheWriterUntilTheReaderMovesOn) {
  SpokeRing ring(8, 4, 1, false);
  ring.keep_from(0, 4);
  for (int i = 0; i < 8; ++i) {
    ring.begin_write();
    ring.commit(RingSlotInfo{});
  }
  EXPECT_FALSE(ring.wait_drained(std::chrono::milliseconds(10))) << "a frame is due at 4 and not made";
  auto writer = std::async(std::launch::async, [&] {
    ring.begin_write();  // spoke 8 would overwrite spoke 0, still needed
    ring.commit(RingSlotInfo{});
  });
  EXPECT_EQ(writer.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  EXPECT_EQ(ring.count(), 8u);
  ring.keep_from(1, 12);  // the reader made its frames; the next (spokes 1..11) is due at 12
  EXPECT_EQ(writer.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(ring.count(), 9u);
  EXPECT_TRUE(ring.wait_drained(std::chrono::milliseconds(10))) << "no frame due with 9 spokes";
  auto blocked = std::async(std::launch::async, [&] {
    ring.begin_write();  // spoke 9 would overwrite spoke 1
    ring.commit(RingSlotInfo{});
  });
  EXPECT_EQ(blocked.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  ring.abort_waits();  // the run stops
  EXPECT_EQ(blocked.wait_for(std::chrono::seconds(5)), std::future_status::ready);
}

// A frame gap (> 100 ms between images) carries its cause: spokes that came late, a slow reconstruction, or a
// frame that was ready to be made and came late anyway.
TEST(StreamControl, FrameGapsAreCountedWithTheirCause) {
  FrameGaps g(100);
  const std::int64_t ms = 1'000'000, t0 = 1000 * ms;
  g.frame(t0, t0 - 5 * ms, 3, 0);                 // the first image
  g.frame(t0 + 40 * ms, t0 + 35 * ms, 3, 0);      // 40 ms: no gap
  g.frame(t0 + 300 * ms, t0 + 295 * ms, 3, 0);    // its spokes came 255 ms after the previous image: input
  g.frame(t0 + 500 * ms, t0 + 320 * ms, 150, 0);  // spokes there at once, 150 ms to make: reconstruction
  g.frame(t0 + 700 * ms, t0 + 520 * ms, 5, 0);    // spokes there, quick to make, late: scheduling
  EXPECT_EQ(g.count(), 3u);
  EXPECT_NEAR(g.max_ms(), 260.0, 1e-9);
  const auto j = g.to_json();
  EXPECT_EQ(j["by_cause"]["input"], 1);
  EXPECT_EQ(j["by_cause"]["reconstruction"], 1);
  EXPECT_EQ(j["by_cause"]["scheduling"], 1);
  EXPECT_EQ(j["last"][0]["cause"], "input");
  EXPECT_NEAR(j["last"][0]["input_wait_ms"].get<double>(), 255.0, 1e-9);
}

// At 10 frames/s (images every 100 ms, a few ms of jitter) there are no frame gaps for the pace itself: the
// threshold follows the stream's frame interval. A sender's 400 ms pause is still one gap, its cause input.
TEST(StreamControl, FrameGapsFollowTheStreamsOwnFrameInterval) {
  FrameGaps g(100);
  const std::int64_t ms = 1'000'000;
  std::int64_t t = 1000 * ms;
  for (int i = 0; i < 60; ++i) {
    const std::int64_t jitter = (i % 3 - 1) * 6 * ms;  // -6, 0, +6 ms
    t += 100 * ms;
    g.frame(t + jitter + 4 * ms, t, 3, 0);
  }
  EXPECT_EQ(g.count(), 0u);
  EXPECT_NEAR(g.to_json()["effective_threshold_ms"].get<double>(), 150.0, 1e-9);
  t += 400 * ms;  // the sender pauses
  g.frame(t + 4 * ms, t, 3, 0);
  EXPECT_EQ(g.count(), 1u);
  EXPECT_EQ(g.to_json()["by_cause"]["input"], 1);
  EXPECT_NEAR(g.to_json()["effective_threshold_ms"].get<double>(), 150.0, 1e-9);
}

// The slowest frames are kept with where their time went: of 25 frames (arrival -> ready 1..25 ms, made in
// 0.5 ms each but frame 7's, made in 20 ms), the ten slowest, slowest first, each split into the time its
// spokes waited for the worker and the worker's own; a closed session's slowest merge into the run's.
TEST(StreamControl, TheSlowestFramesAreKeptWithWhereTheirTimeWent) {
  SlowestFrames slow;
  const std::int64_t ms = 1'000'000, t0 = 1000 * ms;
  for (int i = 1; i <= 25; ++i) {
    FrameResult f;
    f.number = std::uint64_t(i);
    f.last_arrival_ns = t0 + i * 40 * ms;
    f.ready_ns = f.last_arrival_ns + (i == 7 ? 30 : i) * ms;  // frame 7: 30 ms, its own making 20
    f.make_ms = i == 7 ? 20.0 : 0.5;
    f.iterations = i;
    slow.frame(f, t0);
  }
  FrameResult no_arrival;  // a window without an arrival time: left out
  no_arrival.ready_ns = t0 + 5000 * ms;
  slow.frame(no_arrival, t0);
  const auto j = slow.to_json();
  ASSERT_EQ(j.size(), SlowestFrames::kKept);
  EXPECT_EQ(j[0]["frame"], 7);
  EXPECT_NEAR(j[0]["arrival_to_ready_ms"].get<double>(), 30.0, 1e-9);
  EXPECT_NEAR(j[0]["made_ms"].get<double>(), 20.0, 1e-9);
  EXPECT_NEAR(j[0]["waited_ms"].get<double>(), 10.0, 1e-9);
  EXPECT_EQ(j[0]["iterations"], 7);
  for (std::size_t k = 1; k < j.size(); ++k) {
    EXPECT_EQ(j[k]["frame"], 26 - int(k)) << k;  // 25, 24, ... 17
    EXPECT_NEAR(j[k]["waited_ms"].get<double>(), double(26 - int(k)) - 0.5, 1e-9) << k;
  }
  SlowestFrames session;
  FrameResult late;
  late.number = 3;
  late.slice = 1;
  late.last_arrival_ns = t0;
  late.ready_ns = t0 + 100 * ms;
  late.make_ms = 1;
  session.frame(late, t0);
  slow.merge(session);
  const auto m = slow.to_json();
  ASSERT_EQ(m.size(), SlowestFrames::kKept);
  EXPECT_EQ(m[0]["slice"], 1);
  EXPECT_NEAR(m[0]["arrival_to_ready_ms"].get<double>(), 100.0, 1e-9);
  EXPECT_EQ(m[9]["frame"], 18);  // frame 17 dropped for it
}

// The session latency series holds a fixed histogram, so a day-long run uses the memory of its first frame;
// its percentiles are within half a bin (0.6 %) of the exact ones and its maximum is exact.
TEST(StreamControl, SessionLatencyPercentilesFromAFixedHistogram) {
  LatencySeries s(0);
  std::vector<double> v;
  for (int i = 1; i <= 100000; ++i) v.push_back(0.01 * std::pow(1.0001, i));  // 0.01 .. 220 ms
  for (double x : v) s.add(x);
  s.add(0.0);  // below the lowest bin: kept, clamped to the minimum
  v.push_back(0.0);
  std::sort(v.begin(), v.end());
  const auto p = s.summary();
  ASSERT_EQ(p.count, v.size());
  auto exact = [&](double q) { return v[std::size_t(q * double(v.size() - 1) + 0.5)]; };
  EXPECT_NEAR(p.p50, exact(0.5), 0.006 * exact(0.5));
  EXPECT_NEAR(p.p95, exact(0.95), 0.006 * exact(0.95));
  EXPECT_NEAR(p.p99, exact(0.99), 0.006 * exact(0.99));
  EXPECT_EQ(p.max, v.back());
  LatencySeries big(0);
  big.add(5e7);  // above the highest bin
  EXPECT_EQ(big.summary().p50, 5e7);
}

// A solve's time is kept per frame, and a late one is a deadline miss counted with its overrun (how late: a
// prediction a little short, or a stall of the host).
TEST(StreamControl, DeadlineMissesAreCountedWithHowLateTheyWere) {
  Metrics m;
  for (int i = 0; i < 98; ++i) m.add_solver(6, 1e-3, 7.5, 8.0);
  m.add_solver(6, 1e-3, 8.2, 8.0);
  m.deadline_reserve_ms = 0.5;  // learned from the first miss (the worker sets it after each frame)
  m.add_solver(6, 1e-3, 13.0, 8.0);
  m.add_solver(6, 1e-3, 20.0, 0.0);  // no deadline: never a miss
  EXPECT_EQ(m.deadline_misses.load(), 2u);
  const auto over = m.deadline_overrun_ms.summary();
  EXPECT_EQ(over.count, 2u);
  EXPECT_NEAR(over.max, 5.0, 1e-9);
  const auto solve = m.solver_ms.summary();
  EXPECT_EQ(solve.count, 101u);
  EXPECT_NEAR(solve.max, 20.0, 1e-9);
  EXPECT_NEAR(solve.p50, 7.5, 0.05);
  const auto j = m.to_json(1.0);
  EXPECT_EQ(j["solver"]["deadline_misses"].get<int>(), 2);
  EXPECT_NEAR(j["solver"]["deadline_overrun_ms"]["max"].get<double>(), 5.0, 1e-9);
  EXPECT_NEAR(j["solver"]["solve_ms"]["max"].get<double>(), 20.0, 1e-9);
  const auto log = m.deadline_miss_log();  // when each late solve ended, and how long it took
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].solve_ms, 8.2);
  EXPECT_EQ(log[1].solve_ms, 13.0);
  EXPECT_EQ(log[0].reserve_ms, 0.0);  // the reserve each late frame ran with
  EXPECT_EQ(log[1].reserve_ms, 0.5);
  EXPECT_LE(log[0].end_ns, log[1].end_ns);
  EXPECT_GT(log[0].end_ns, 0);
}

// A miss overlaps a host stall when its solve [end - solve, end] meets a late wake-up [due, due + late]; the
// probe itself wakes about once a millisecond and keeps only the late wake-ups.
TEST(StreamControl, MissesAreMatchedToTheHostStallsTheyOverlap) {
  const std::int64_t ms = 1'000'000;
  const std::vector<DeadlineMiss> misses = {{100 * ms, 9.0}, {200 * ms, 9.0}, {300 * ms, 9.0}};
  // a stall ending 1 ms into the first solve; one entirely inside the second; none near the third
  const std::vector<HostStall> stalls = {{88 * ms, 4 * ms}, {195 * ms, 2 * ms}, {320 * ms, 5 * ms}};
  EXPECT_EQ(misses_in_stalls(misses, stalls), 2);
  EXPECT_EQ(misses_in_stalls(misses, {{80 * ms, 10 * ms}}), 0);  // ended 1 ms before the first solve began
  EXPECT_EQ(misses_in_stalls({}, stalls), 0);
  HostStallProbe probe;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  probe.stop();
  std::printf("probe: %llu wake-ups in 200 ms, %zu more than 1 ms late\n",
              static_cast<unsigned long long>(probe.wakeups()), probe.stalls().size());
  EXPECT_GE(probe.wakeups(), 100u);  // a loaded 2-core machine still wakes it at least every 2 ms on average
  EXPECT_LE(probe.wakeups(), 201u);
  for (const HostStall& s : probe.stalls()) EXPECT_GT(s.late_ns, ms);
}

// A recording replayed at --speed max into `run --window 64 --stride 16` faster than it reconstructs (each
// frame held 50 ms by the test hook: 122 frames take 6 s, the 2000 spokes arrive in a fraction of that) skips
// to the newest frame, and says once that --no-skip reconstructs every frame; with --no-skip it makes all
// (2000 - 64) / 16 + 1 = 122.
TEST(StreamControl, AReplayFasterThanTheReconstructionSaysOnceThatNoSkipMakesEveryFrame) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary(), rec = dir / "rec.h5";
  const auto sim =
      test::run_command(bin + " simulate --out " + rec + " --spokes 2000 --matrix 128 --coils 4");
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const auto replay_into = [&](const std::string& env, const std::string& extra, int port) {
    const std::string m = dir / ("m" + std::to_string(port) + ".json");
    auto run = std::async(std::launch::async, [&] {
      return test::run_command(
          env + bin + " run --headless --backend cpu --endpoint tcp://127.0.0.1:" + std::to_string(port) +
          " --window 64 --stride 16 --until-close --duration 120" + extra + " --metrics-json " + m);
    });
    const auto rp =
        test::run_command(bin + " replay " + rec + " --endpoint tcp://127.0.0.1:" + std::to_string(port) +
                          " --speed max --wait 20");
    EXPECT_EQ(rp.exit_code, 0) << rp.output;
    const auto r = run.get();
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream f(m);
    return std::pair{r.output, nlohmann::json::parse(f, nullptr, false)};
  };
  const auto count = [](const std::string& s, const std::string& what) {
    std::size_t n = 0;
    for (auto at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
    return n;
  };
  const auto [skipping, ms] = replay_into("RADSTREAM_TEST_FRAME_DELAY_MS=50 ", "", 26241);
  ASSERT_FALSE(ms.is_discarded()) << skipping;
  const auto made = ms.at("frames").get<long>(), skipped = ms.at("frames_skipped").get<long>();
  std::printf("--speed max: %ld frames made, %ld skipped\n", made, skipped);
  EXPECT_EQ(made + skipped, 122);
  EXPECT_GT(skipped, made);
  EXPECT_EQ(count(skipping, "--no-skip"), 1u) << skipping;
  const auto [every, me] = replay_into("", " --no-skip", 26242);
  ASSERT_FALSE(me.is_discarded()) << every;
  EXPECT_EQ(me.at("frames").get<long>(), 122);
  EXPECT_EQ(me.at("frames_skipped").get<long>(), 0);
  EXPECT_EQ(count(every, "--no-skip"), 0u) << every;
}

// A live NLINV stream under a deadline no frame can meet (1 us; the first Newton step's first CG iteration
// always runs): every frame is stopped early and still late, each miss is counted with its overrun, and the
// solver's reserve learned from them reaches its cap (a quarter of the deadline), in the metrics and their
// JSON.
TEST(StreamControl, AnImpossibleDeadlineCountsEveryFrameLateAndTheReserveLearnedFromIt) {
  RunConfig cfg = config(26270);
  cfg.recon.method = ReconMethod::Nlinv;
  cfg.recon.nlinv.newton = 6;
  cfg.recon.nlinv.deadline_ms = 0.001;
  cfg.recon.validate();
  Rig rig(cfg, 9);
  StreamRuntime& p = rig.p;
  Collector& c = rig.c;
  const Simulator sim(sim_params(32, 2));
  rig.s.send_header(stream_header_to_xml(sim.header()));
  for (const auto& x : sim.spokes(0, 80)) rig.s.send_spoke(x);
  ASSERT_TRUE(eventually([&] { return !c.get().empty() && c.get().back().end_serial >= 80; }));
  p.stop();
  const Metrics& m = p.metrics();
  const auto frames = c.get();
  std::printf("%zu frames: %llu early stops, %llu misses; reserve %.6f ms (max %.6f)\n", frames.size(),
              (unsigned long long)m.deadline_stops.load(), (unsigned long long)m.deadline_misses.load(),
              m.deadline_reserve_ms.load(), m.deadline_reserve_max_ms.load());
  ASSERT_GE(frames.size(), 4u);  // ends 32, 48, 64, 80
  EXPECT_EQ(m.deadline_stops.load(), m.frames.load());
  EXPECT_EQ(m.deadline_misses.load(), m.frames.load());
  EXPECT_EQ(m.deadline_overrun_ms.summary().count, m.frames.load());
  for (const auto& f : frames) EXPECT_EQ(f.iterations, 1);
  EXPECT_NEAR(m.deadline_reserve_ms.load(), 0.25e-3, 1e-12);
  EXPECT_NEAR(m.deadline_reserve_max_ms.load(), 0.25e-3, 1e-12);
  const auto j = m.to_json(1.0);
  EXPECT_NEAR(j["solver"]["deadline_reserve_max_ms"].get<double>(), 0.25e-3, 1e-12);
}

// A stream that wants every frame loses none to a slow sink: its worker waits for room in the sinks' queue
// (8 frames) as its intake waits for the worker. The image files are named pipes read one every 40 ms, so
// the twelve frames of a burst (made in a few ms each) reach the image writer faster than it can write them;
// every frame is written, in order, and nothing is counted as dropped. (Before, the queue dropped its oldest
// frame: the Python subscriber lost frame 1 of a replay in about one run of eight.)
TEST(StreamControl, AnEveryFrameStreamLosesNoFrameToASlowSink) {
  test::TempDir dir;
  const std::filesystem::path img = dir / "img";
  std::filesystem::create_directories(img);
  constexpr int kFrames = 12;
  std::vector<std::string> fifos;
  for (int n = 1; n <= kFrames; ++n) {
    fifos.push_back((img / fmt::format("frame_{:06d}.png", n)).string());
    ASSERT_EQ(::mkfifo(fifos.back().c_str(), 0600), 0) << fifos.back();
  }
  std::atomic<int> opened{0};
  std::vector<std::size_t> bytes(kFrames, 0);
  std::thread reader([&] {
    for (int k = 0; k < kFrames; ++k) {
      std::this_thread::sleep_for(40ms);
      const int fd = ::open(fifos[std::size_t(k)].c_str(), O_RDONLY);  // waits for the writer (or the end)
      opened = k + 1;
      if (fd < 0) continue;
      char buf[4096];
      for (ssize_t r; (r = ::read(fd, buf, sizeof buf)) > 0;) bytes[std::size_t(k)] += std::size_t(r);
      ::close(fd);
    }
  });
  RunConfig cfg = config(27471);
  cfg.sinks.images = img.string();
  cfg.sinks.image_every = 1;
  Rig rig(cfg, 91);
  const Simulator sim(sim_params(32, 2));
  rig.s.send_header(stream_header_to_xml(sim.header()));
  for (const auto& sp : sim.spokes(0, 32 + 16 * (kFrames - 1))) rig.s.send_spoke(sp.header, sp);
  const bool made = rig.p.wait_frames(kFrames, 30s);
  EXPECT_TRUE(
      eventually([&] { return rig.p.metrics().images_written.load() >= std::uint64_t(kFrames); }, 30s))
      << rig.p.report();
  rig.p.stop();
  // A pipe nobody wrote (a dropped frame) would hold the reader: opened for writing here, it reads as empty.
  for (int k = opened; k < kFrames; ++k) {
    const int fd = ::open(fifos[std::size_t(k)].c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
  }
  reader.join();
  EXPECT_TRUE(made) << rig.p.report();
  EXPECT_EQ(rig.p.metrics().sink_dropped.load(), 0u);
  EXPECT_EQ(rig.p.metrics().images_written.load(), std::uint64_t(kFrames));
  for (int k = 0; k < kFrames; ++k)
    EXPECT_GT(bytes[std::size_t(k)], 100u) << "frame " << k + 1 << " not written";
}
