// The MRD server as a suite's reconstruction server: every MRD client is a session with its own pipeline.
// An unpaced client gets every frame of its stream (gridding, cg-sense, nlinv), equal to the offline chain
// over the same windows in order; four clients at once with different configs and data each get their own
// frames while a ZeroMQ stream beside them keeps its own method, window and images; a client that sends
// nothing, one that only sends queries, one that vanishes and one that comes back at once cannot keep a good
// client out (times asserted); and replay --mrd says when fewer images came back than frames were due.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "ingest/protocols.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_file.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/memory_budget.hpp"
#include "recon/recon_chain.hpp"
#include "recon/registry.hpp"
#include "sim/simulator.hpp"
#include "stream/mrd_test_client.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "tests/stages/temporal_mean/example_method.hpp"

using namespace radstream;
using namespace radstream::streamtest;
using namespace radstream::mrdtest;
using namespace std::chrono_literals;

namespace {

// A whole session: config (a name, or a YAML text when it holds a newline), header, every spoke at once,
// close; what the server sends back until its close.
Replies whole_session(int port, const std::string& config, const StreamHeader& h,
                      const std::vector<Spoke>& spokes) {
  RawClient c(port);
  if (!c.ok()) return {};
  if (config.find('\n') != std::string::npos)
    c.text(2, config);
  else if (!config.empty())
    c.config_name(config);
  c.text(3, stream_header_to_xml(h));
  for (const auto& s : spokes) c.acquisition(s);
  c.put<std::uint16_t>(4);
  if (!c.flush()) return {};
  return c.read_until_close();
}

// The offline chain over the windows [end - W, end), end = W, W + S, ..., in order (its warm starts and
// state as the stream's): the magnitudes.
std::vector<std::vector<float>> offline_frames(const ReconParams& r, const StreamHeader& h,
                                               const std::vector<Spoke>& spokes, int W, int S,
                                               const Registry& reg = default_registry()) {
  ReconChain chain(r, Backend::Cpu, reg);
  chain.configure(h.geometry(W));
  std::vector<std::vector<float>> out;
  for (std::size_t end = std::size_t(W); end <= spokes.size(); end += std::size_t(S)) {
    const auto img = chain.reconstruct(frame_from_spokes(h, std::span(spokes).subspan(end - W, W)));
    std::vector<float> v(img.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = img.data[i].real();
    out.push_back(std::move(v));
  }
  return out;
}

double rel(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0, n = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    e += double(a[i] - b[i]) * (a[i] - b[i]), n += double(b[i]) * b[i];
  return a.size() == b.size() && n > 0 ? std::sqrt(e / n) : 1.0;
}

// The worst relative error of the images back against the offline frames (1 when the counts differ).
double worst_error(const Replies& r, const std::vector<std::vector<float>>& want) {
  if (r.images.size() != want.size()) return 1.0;
  double worst = 0;
  for (std::size_t k = 0; k < want.size(); ++k)
    worst = std::max(worst, rel(image_values(r.images[k]), want[k]));
  return worst;
}

std::string texts_of(const Replies& r) {
  std::string s;
  for (const auto& t : r.texts) s += t + "\n";
  return s;
}

std::string write_maps(const test::TempDir& dir, const Simulator& sim, const std::vector<Spoke>& spokes) {
  const Frame calib = frame_from_spokes(sim.header(), std::span(spokes).subspan(0, 32));
  const HostBuffer<cfloat> maps = estimate_coil_maps(calib.data.view(), calib.traj.view(), 32);
  write_cfl(dir / "sens", {32, 32, 1, 3}, maps.view().span());
  return dir / "sens.cfl";
}

}  // namespace

// 128 spokes sent at once, as a scanner replaying a file does: 7 frames due with window 32 and stride 16,
// and 7 images back for each method, each the offline chain's frame (<= 1e-5), then a summary that says so.
TEST(MrdSessions, AnUnpacedClientGetsEveryFrameOfItsMethod) {
  test::TempDir dir;
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 128);
  const std::string sens = write_maps(dir, sim, spokes);
  int port = 26410;
  for (const ReconMethod m : {ReconMethod::Gridding, ReconMethod::CgSense, ReconMethod::Nlinv}) {
    const Registry reg = default_registry();
    RunConfig cfg = mrd_config(port++, MrdPixels::Float);
    cfg.recon.method = m;
    cfg.recon.cg.iterations = 6;
    if (m == ReconMethod::CgSense) cfg.recon.cg.sens = sens;
    StreamRuntime p(cfg, reg, make_protocol_servers);
    p.start();
    const Replies r = whole_session(port_of(p.endpoint_of("mrd")), "", sim.header(), spokes);
    p.stop();
    const auto want = offline_frames(cfg.recon, sim.header(), spokes, 32, 16);
    ASSERT_EQ(want.size(), 7u);
    EXPECT_TRUE(r.closed) << to_string(m);
    EXPECT_EQ(r.images.size(), 7u) << to_string(m) << ": " << texts_of(r);
    const double e = worst_error(r, want);
    std::printf("%s: %zu of 7 frames back, worst error against the offline chain %.2g\n",
                to_string(m).c_str(), r.images.size(), e);
    EXPECT_LE(e, 1e-5) << to_string(m);
    ASSERT_FALSE(r.texts.empty());
    EXPECT_EQ(r.texts.back(), "DBG radstream: summary: 128 spokes, 7 frames due, 7 made, 7 sent")
        << texts_of(r);
    for (std::size_t k = 0; k < r.images.size(); ++k) {
      EXPECT_EQ(r.images[k].head.image_index, k);
      EXPECT_EQ(r.images[k].meta("FrameNumber"), double(k + 1));
    }
  }
}

// A scanner names, as its config, a method that the server's registry adds (the tests' example method): the
// server offers it with the built-in ones, and the session runs it: every frame back, equal to the example's
// offline chain, while the server's own method stays gridding.
TEST(MrdSessions, AClientNamesAMethodTheServersRegistryAdds) {
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 128);
  Registry reg = default_registry();
  test::add_example_method(reg);
  RunConfig cfg = mrd_config(26416, MrdPixels::Float);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  RawClient c(port);  // an unknown name: the answer lists the methods the server has
  c.config_name("nonsense");
  c.text(3, stream_header_to_xml(sim.header()));
  ASSERT_TRUE(c.flush());
  const Replies refused = c.read_until_close();
  const Replies r = whole_session(port, test::kExampleMethod, sim.header(), spokes);
  p.stop();
  EXPECT_NE(texts_of(refused).find("gridding-averaged"), std::string::npos) << texts_of(refused);
  ReconParams example = cfg.recon;
  example.method = MethodName(test::kExampleMethod);
  const auto want = offline_frames(example, sim.header(), spokes, 32, 16, reg);
  const auto gridding = offline_frames(cfg.recon, sim.header(), spokes, 32, 16);
  ASSERT_EQ(want.size(), 7u);
  EXPECT_EQ(r.images.size(), 7u) << texts_of(r);
  const double e = worst_error(r, want), other = worst_error(r, gridding);
  std::printf("the example method over MRD: %zu of 7 frames, worst error %.2g (against gridding's %.2g)\n",
              r.images.size(), e, other);
  EXPECT_LE(e, 1e-5);
  EXPECT_GT(other, 0.1);  // not the server's own method
  EXPECT_NE(texts_of(r).find("gridding-averaged"), std::string::npos) << texts_of(r);  // the DBG line
}

// Four clients at once, each with its own config and data (gridding, fbp, a YAML text with its own window,
// nlinv), beside a ZeroMQ stream: each gets its own frames, equal to its own offline chain, and the ZeroMQ
// stream keeps its method, window and images (equal to its offline chain) as if they were not there.
TEST(MrdSessions, FourClientsAtOnceEachGetTheirOwnFramesBesideAZeroMqStream) {
  const Registry reg = default_registry();
  RunConfig mc = mrd_config(26421, MrdPixels::Float);
  mc.mrd.max_sessions = 4;
  StreamRuntime p(mc, reg, make_protocol_servers);
  Collector zmq_frames;
  zmq_frames.attach(p);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  struct Client {
    std::string config;
    ReconMethod method;
    int window, stride;
    unsigned seed;
  };
  const std::vector<Client> clients = {
      {"gridding", ReconMethod::Gridding, 32, 16, 11},
      {"fbp", ReconMethod::Fbp, 32, 16, 12},
      {"recon:\n  method: gridding\nframes:\n  window: 48\n  stride: 8\n", ReconMethod::Gridding, 48, 8, 13},
      {"nlinv", ReconMethod::Nlinv, 32, 16, 14}};
  std::vector<std::vector<Spoke>> data;
  std::vector<StreamHeader> headers;
  for (const auto& c : clients) {
    SimParams sp = mrd_sim();
    sp.seed = c.seed;
    sp.coils = 2 + int(c.seed % 3);
    const Simulator sim(sp);
    headers.push_back(sim.header());
    data.push_back(sim.spokes(0, 96));
  }
  // The ZeroMQ stream: its own runtime's sender, its spokes to this runtime's own endpoint.
  SimParams zp = mrd_sim();
  zp.seed = 21;
  const Simulator zsim(zp);
  const auto zspokes = zsim.spokes(0, 96);
  std::vector<std::future<Replies>> got;
  for (std::size_t i = 0; i < clients.size(); ++i)
    got.push_back(std::async(std::launch::async,
                             [&, i] { return whole_session(port, clients[i].config, headers[i], data[i]); }));
  {
    zmq::context_t ctx(1);
    Sender s(ctx, Rig::to(p.endpoint()), 77);
    s.send_header(stream_header_to_xml(zsim.header()));
    for (const auto& sp : zspokes) s.send_spoke(sp);
    s.close();
    ASSERT_TRUE(eventually([&] { return zmq_frames.get().size() >= 5u; }, 20s));
  }
  std::vector<Replies> replies;
  for (auto& f : got) replies.push_back(f.get());
  EXPECT_EQ(p.recon().method, ReconMethod::Gridding);  // the server's own stream: its settings, untouched
  EXPECT_EQ(p.window(), 32);
  EXPECT_EQ(p.stride(), 16);
  p.stop();
  for (std::size_t i = 0; i < clients.size(); ++i) {
    ReconParams r = mc.recon;
    r.method = clients[i].method;
    const auto want = offline_frames(r, headers[i], data[i], clients[i].window, clients[i].stride);
    const double e = worst_error(replies[i], want);
    std::printf("client %zu (%s): %zu images of %zu due, worst error %.2g\n", i,
                to_string(clients[i].method).c_str(), replies[i].images.size(), want.size(), e);
    EXPECT_TRUE(replies[i].closed) << i;
    EXPECT_EQ(replies[i].images.size(), want.size()) << i << ": " << texts_of(replies[i]);
    EXPECT_LE(e, 1e-5) << "client " << i;
  }
  const auto zf = zmq_frames.get();
  const auto zwant = offline_frames(mc.recon, zsim.header(), zspokes, 32, 16);
  ASSERT_EQ(zf.size(), zwant.size());
  for (std::size_t k = 0; k < zf.size(); ++k) {
    std::vector<float> v(zf[k].image.size());
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = zf[k].image[i].real();
    EXPECT_LE(rel(v, zwant[k]), 1e-5) << "ZeroMQ frame " << k;
  }
  EXPECT_EQ(p.metrics().mrd.sessions_admitted.load(), 4u);
  EXPECT_EQ(p.metrics().mrd.sessions_completed.load(), 4u);
  EXPECT_EQ(p.metrics().mrd.sessions_failed.load(), 0u);
  EXPECT_EQ(p.metrics().mrd.busy_refused.load(), 0u);
  const auto each = p.metrics().mrd.session_summaries();  // the metrics JSON's mrd.each_session
  ASSERT_EQ(each.size(), 4u);
  for (const auto& e : each) {
    EXPECT_EQ(e["ended"], "completed") << e.dump();
    EXPECT_EQ(e["frames_due"], e["frames_sent"]) << e.dump();
    EXPECT_EQ(e["spokes"], 96) << e.dump();
  }
}

// One place (max_sessions 1), a header deadline and an idle deadline of 1 s: a connection that sends nothing
// holds no place; one that only sends queries is ended after 1 s without an acquisition; one that vanishes
// frees its place at once; a client that comes back right after its close is served. The good client is
// served each time, within the times asserted.
TEST(MrdSessions, NoClientCanHoldTheScannerOut) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26430, MrdPixels::Float);
  cfg.mrd.max_sessions = 1;
  cfg.mrd.header_timeout_s = 1.0;
  cfg.mrd.idle_timeout_s = 1.0;
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 48);
  // The good client: told busy while the place is held, it tries again every 50 ms.
  const auto good = [&](std::chrono::milliseconds within) {
    const auto t0 = std::chrono::steady_clock::now();
    Replies r;
    do {
      r = whole_session(port, "gridding", sim.header(), spokes);
      if (r.images.size() == 2u) break;
      std::this_thread::sleep_for(50ms);
    } while (std::chrono::steady_clock::now() - t0 < within + 2s);
    const auto took =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    EXPECT_EQ(r.images.size(), 2u) << texts_of(r);
    return took;
  };
  {  // a connection that sends nothing: no place held, the good client served at once
    RawClient silent(port);
    ASSERT_TRUE(silent.ok());
    const auto took = good(500ms);
    EXPECT_LT(took, 500ms);
    const Replies r = silent.read_until_close();  // ended by the header deadline
    ASSERT_FALSE(r.texts.empty());
    EXPECT_NE(r.texts[0].find("no XML header within 1 s"), std::string::npos) << r.texts[0];
  }
  {  // queries only, after a header: ended 1 s after its header (queries are no activity)
    RawClient q(port);
    q.text(3, stream_header_to_xml(sim.header()));
    ASSERT_TRUE(q.flush());
    ASSERT_TRUE(eventually([&] { return p.metrics().mrd.sessions_admitted.load() == 2u; }));
    std::atomic<bool> asking{true};
    std::thread asker([&] {
      while (asking) {
        q.put<std::uint16_t>(6);  // a query: reserved u64, correlation id, length, the text
        q.put<std::uint64_t>(0);
        q.put<std::uint64_t>(1);
        q.put<std::uint64_t>(16);
        q.raw("ismrmrd::version", 16);
        if (!q.flush()) return;
        std::this_thread::sleep_for(200ms);
      }
    });
    const auto took = good(1500ms);
    asking = false;
    asker.join();
    EXPECT_GT(took, 500ms);  // it had to wait for the idle deadline
    EXPECT_LT(took, 2500ms);
  }
  {  // a client that vanishes mid-acquisition: its place is free at once
    RawClient v(port);
    v.text(3, stream_header_to_xml(sim.header()));
    v.acquisition(spokes[0]);
    v.put<std::uint16_t>(1008);
    ASSERT_TRUE(v.flush());
    ASSERT_TRUE(eventually([&] { return p.metrics().mrd.acquisitions.load() > 0u; }));
    v.close();
    EXPECT_LT(good(500ms), 1000ms);
  }
  // Back at once after its close, five times: never told busy.
  const auto busy0 = p.metrics().mrd.busy_refused.load();
  for (int i = 0; i < 5; ++i) {
    const Replies r = whole_session(port, "gridding", sim.header(), spokes);
    EXPECT_EQ(r.images.size(), 2u) << "session " << i << ": " << texts_of(r);
  }
  EXPECT_EQ(p.metrics().mrd.busy_refused.load(), busy0);
  p.stop();
}

// A server that cannot keep up, with the `latest` frame policy: fewer images than frames due, and replay
// --mrd exits non-zero naming both counts.
TEST(MrdSessions, ReplaySaysWhenFewerImagesCameBackThanFramesWereDue) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const auto sim = test::run_command(bin + " simulate --out " + (dir / "rec.h5") +
                                     " --spokes 400 --matrix 32 --coils 3 --snr 30");
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const std::string run = "RADSTREAM_TEST_FRAME_DELAY_MS=40 " + bin + " run --headless --endpoint " +
                          tcp(26440) +
                          " --mrd-listen tcp://127.0.0.1:26441 --mrd-frames latest --window 32 --stride 8 "
                          "--duration 10 --images '' > " +
                          (dir / "run.log") + " 2>&1 & pid=$!; sleep 1.5; ";
  const auto r =
      test::run_command("(" + run + bin + " replay " + (dir / "rec.h5") +
                        " --mrd tcp://127.0.0.1:26441 --config gridding --speed max; rc=$?; kill -INT "
                        "$pid; wait $pid; exit $rc)");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("of the 47 frames the server said were due"), std::string::npos) << r.output;
}

// One conditioning chain for every protocol: the same noise scans (correlated, read at half the bandwidth)
// and spokes sent through MRD and through ZeroMQ are prewhitened alike; the two recordings' spokes agree to
// float rounding (<= 1e-6), and both differ from the raw data by the whitening (so the check can fail).
TEST(MrdSessions, AZeroMqStreamWithNoiseScansIsPrewhitenedAsAnMrdSessionIs) {
  test::TempDir dir;
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 40);
  const int C = 3, S = spokes[0].samples;
  std::mt19937 rng(5);
  std::normal_distribution<double> g(0, 0.01);
  std::vector<std::vector<cfloat>> noise;
  for (int k = 0; k < 20; ++k) {
    std::vector<cfloat> n(std::size_t(C) * S);
    for (int s = 0; s < S; ++s) {
      const std::complex<double> z0(g(rng), g(rng)), z1(g(rng), g(rng)), z2(g(rng), g(rng));
      n[std::size_t(s)] = cfloat(z0);
      n[std::size_t(S + s)] = cfloat(0.5 * z0 + 0.8 * z1);
      n[std::size_t(2 * S + s)] = cfloat(-0.3 * z0 + 0.2 * z1 + 1.3 * z2);
    }
    noise.push_back(n);
  }
  const auto header_of = [&](const Spoke& s, bool is_noise, bool traj) {
    auto hb = acquisition_header_bytes(s.header, S, C, traj ? 2 : 0);
    ISMRMRD::ISMRMRD_AcquisitionHeader h;
    std::memcpy(&h, hb.data(), sizeof h);
    h.sample_time_us = is_noise ? 5.0f : 2.5f;
    if (is_noise) h.flags = std::uint64_t(1) << (ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
    std::memcpy(hb.data(), &h, sizeof h);
    return hb;
  };
  const Registry reg = default_registry();
  {  // through MRD
    RunConfig cfg = mrd_config(26450, MrdPixels::Float);
    cfg.sinks.record = dir / "mrd.h5";
    StreamRuntime p(cfg, reg, make_protocol_servers);
    p.start();
    RawClient c(port_of(p.endpoint_of("mrd")));
    c.text(3, stream_header_to_xml(sim.header()));
    for (const auto& n : noise) {
      Spoke s = spokes[0];
      s.data = n;
      const auto hb = header_of(s, true, false);
      ISMRMRD::ISMRMRD_AcquisitionHeader h;
      std::memcpy(&h, hb.data(), sizeof h);
      c.acquisition(s, &h, false);
    }
    for (const auto& s : spokes) {
      const auto hb = header_of(s, false, true);
      ISMRMRD::ISMRMRD_AcquisitionHeader h;
      std::memcpy(&h, hb.data(), sizeof h);
      c.acquisition(s, &h, true);
    }
    c.put<std::uint16_t>(4);
    ASSERT_TRUE(c.flush());
    EXPECT_TRUE(c.read_until_close().closed);
    p.stop();
  }
  {  // through ZeroMQ
    RunConfig cfg = small_config(26451, false);
    cfg.sinks.record = dir / "zmq.h5";
    StreamRuntime p(cfg, reg, make_protocol_servers);
    p.start();
    zmq::context_t ctx(1);
    Sender s(ctx, Rig::to(cfg.stream.endpoint), 9);
    s.send_header(stream_header_to_xml(sim.header()));
    std::uint64_t seq = 1;
    const auto send = [&](const Spoke& sp, const std::vector<cfloat>& data, bool is_noise) {
      wire::Envelope e;
      e.type = std::uint16_t(wire::MsgType::Spoke);
      e.stream_id = 9;
      e.sequence = ++seq;
      e.spoke_index = sp.header.spoke_index;
      e.acquired_ns = monotonic_ns();
      e.sent_ns = e.acquired_ns;
      e.angle = std::nan("");
      const auto hb = header_of(sp, is_noise, !is_noise);
      const std::span<const float> traj = is_noise ? std::span<const float>() : std::span(sp.traj);
      s.send_spoke_frames(e, hb, std::as_bytes(traj), std::as_bytes(std::span(data)));
    };
    for (const auto& n : noise) send(spokes[0], n, true);
    for (const auto& sp : spokes) send(sp, sp.data, false);
    s.close();
    ASSERT_TRUE(eventually([&] { return p.metrics().recorded.load() == 40u; }));
    EXPECT_EQ(p.metrics().noise_spokes.load(), 20u);
    p.stop();
  }
  const MrdRecording a = read_mrd(dir / "mrd.h5"), b = read_mrd(dir / "zmq.h5");
  ASSERT_EQ(a.spokes.size(), 40u);
  ASSERT_EQ(b.spokes.size(), 40u);
  double e = 0, n = 0, raw = 0;
  for (std::size_t k = 0; k < 40; ++k)
    for (std::size_t i = 0; i < a.spokes[k].data.size(); ++i) {
      e += std::norm(std::complex<double>(a.spokes[k].data[i]) - std::complex<double>(b.spokes[k].data[i]));
      n += std::norm(std::complex<double>(a.spokes[k].data[i]));
      raw += std::norm(std::complex<double>(a.spokes[k].data[i]) - std::complex<double>(spokes[k].data[i]));
    }
  std::printf("MRD vs ZeroMQ prewhitened spokes: %.2g; prewhitened vs raw: %.3f\n", std::sqrt(e / n),
              std::sqrt(raw / n));
  EXPECT_LE(std::sqrt(e / n), 1e-6);
  EXPECT_GT(std::sqrt(raw / n), 0.1);
}

// All sessions together hold no more than stream.memory_limit_total (--memory-limit-total): with room for
// one session's stream, a second client's header is refused at once with an ERR text that names the limit,
// while the first goes on; once the first has ended, its memory is free and the next client is served.
TEST(MrdSessions, AllSessionsTogetherHoldNoMoreThanTheTotalMemoryLimit) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26450, MrdPixels::Float);
  cfg.mrd.max_sessions = 4;
  const Simulator sim(mrd_sim());
  const auto spokes = sim.spokes(0, 48);
  const MemoryNeed one =
      memory_need(reg, sim.header(), cfg.recon, std::max(cfg.frames.max_window, cfg.frames.window),
                  cfg.stream.ring_margin, cfg.stream.slices, false);
  cfg.stream.memory_limit_total = fmt::format("{}K", int(1.5 * one.host_bytes / 1024));
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  RawClient first(port);
  first.config_name("gridding");
  first.text(3, stream_header_to_xml(sim.header()));
  for (int i = 0; i < 8; ++i) first.acquisition(spokes[std::size_t(i)]);
  ASSERT_TRUE(first.flush());
  ASSERT_TRUE(eventually([&] { return p.memory_account().held_host() > 0.9 * one.host_bytes; }));
  EXPECT_LE(p.memory_account().held_host(), 1.01 * one.host_bytes);
  const auto t0 = std::chrono::steady_clock::now();
  const Replies second = whole_session(port, "gridding", sim.header(), spokes);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_TRUE(second.images.empty());
  ASSERT_FALSE(second.texts.empty());
  EXPECT_EQ(second.texts.back().rfind("ERR", 0), 0u) << texts_of(second);
  EXPECT_NE(second.texts.back().find("all streams together may hold"), std::string::npos) << texts_of(second);
  EXPECT_NE(second.texts.back().find("--memory-limit-total"), std::string::npos) << texts_of(second);
  EXPECT_EQ(p.metrics().mrd.sessions_refused.load(), 1u);
  // The first session is unharmed: the rest of its spokes, its close, its two frames.
  for (std::size_t i = 8; i < spokes.size(); ++i) first.acquisition(spokes[i]);
  first.put<std::uint16_t>(4);
  ASSERT_TRUE(first.flush());
  const Replies r1 = first.read_until_close();
  EXPECT_EQ(r1.images.size(), 2u) << texts_of(r1);
  ASSERT_TRUE(eventually([&] { return p.memory_account().held_host() < 1.0; }));
  const Replies third = whole_session(port, "gridding", sim.header(), spokes);
  EXPECT_EQ(third.images.size(), 2u) << texts_of(third);
  p.stop();
  EXPECT_LT(p.memory_account().held_host(), 1.0);
}
