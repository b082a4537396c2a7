// The streaming path through real sockets (tcp loopback): end to end against the offline reconstruction,
// record then replay byte for byte, every bad-input case counted while the pipeline goes on, PUB/SUB gap
// detection, and a sender that vanishes and comes back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "ingest/protocols.hpp"
#include "ingest/zmq/zmq_ingest.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_file.hpp"
#include "recon/coil_map_estimate.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "tests/stages/temporal_mean/example_method.hpp"
#include "wire/sender.hpp"
#include "wire/wire.hpp"

using namespace radstream;
using namespace std::chrono_literals;

namespace {

using namespace radstream::streamtest;
using radstream::test::rel_error;

SimParams small_sim() {
  SimParams s;
  s.matrix = 32;
  s.coils = 3;
  s.snr = 30;
  s.motion = true;
  return s;
}

RunConfig config(int port) {
  return small_config(port);
}

// A sender with this stream id: the header, then every spoke 2 ms apart (stamped when sent), then a close.
void send_paced(const std::string& endpoint, const Simulator& sim, const std::vector<Spoke>& spokes,
                std::uint32_t stream_id) {
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = endpoint;
  Sender s(ctx, sp, stream_id);
  s.send_header(stream_header_to_xml(sim.header()));
  for (const Spoke& spoke : spokes) {
    Spoke x = spoke;
    x.header.acquired_ns = monotonic_ns();
    s.send_spoke(x);
    std::this_thread::sleep_for(2ms);
  }
  s.close();
}

// Receives whole multipart messages as byte vectors.
wire::Parts recv_parts(zmq::socket_t& s) {
  wire::Parts parts;
  zmq::message_t m;
  do {
    if (!s.recv(m, zmq::recv_flags::none)) return {};
    const auto* b = static_cast<const std::byte*>(m.data());
    parts.emplace_back(b, b + m.size());
  } while (s.get(zmq::sockopt::rcvmore));
  return parts;
}

std::uint16_t type_of(const wire::Parts& p) {
  std::uint16_t t = 0;
  if (!p.empty() && p[0].size() >= 8) std::memcpy(&t, p[0].data() + 6, 2);
  return t;
}

}  // namespace

TEST(Stream, EndToEndOverTcpEqualsOfflineRecon) {
  const RunConfig cfg = config(26101);
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  std::mutex m;
  std::vector<FrameResult> frames;
  p.on_frame([&](const FrameResult& f) {
    std::lock_guard lock(m);
    frames.push_back(f);
  });
  p.start();
  const Simulator sim(small_sim());
  const auto spokes = sim.spokes(0, 96);
  send_paced(cfg.stream.endpoint, sim, spokes, 11);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames + p.metrics().frames_skipped >= 5; }));
  p.stop();
  EXPECT_EQ(p.metrics().spokes.load(), 96u);
  EXPECT_EQ(p.metrics().missing.load(), 0u);
  EXPECT_EQ(p.metrics().rejected_total(), 0u);
  ReconChain offline(cfg.recon, Backend::Cpu, reg);
  offline.configure(sim.header().geometry(32));
  std::lock_guard lock(m);
  ASSERT_GE(frames.size(), 3u);
  for (const auto& f : frames) {
    ASSERT_EQ(f.last_spoke - f.first_spoke + 1, 32u);
    const Frame ref = frame_from_spokes(sim.header(), std::span(spokes).subspan(f.first_spoke, 32));
    const auto img = offline.reconstruct(ref);
    const double e = rel_error(f.image, std::vector<cfloat>(img.data, img.data + img.size()));
    std::printf("frame %llu (spokes %llu..%llu): streamed vs offline %.3g\n", (unsigned long long)f.number,
                (unsigned long long)f.first_spoke, (unsigned long long)f.last_spoke, e);
    EXPECT_LE(e, 1e-6);
  }
}

// A stream runs a method that its runtime's registry adds (the tests' example method, chosen by name in the
// run's config): every frame is the example's chain's (the gridding image averaged with the earlier frames'),
// equal to the same chain made offline from the same registry; a runtime whose registry lacks the method
// refuses the config when it is made, naming the method.
TEST(Stream, AMethodTheRegistryAddsRunsByItsName) {
  RunConfig cfg = config(26109);
  cfg.frames.skip_when_behind = false;  // every frame made: the averaged images depend on all before them
  cfg.recon = ReconParams::from_config(
      YAML::Load("{method: gridding-averaged, backend: cpu, threads: 1, fftw_planner: estimate}"));
  Registry reg = default_registry();
  test::add_example_method(reg);
  try {
    StreamRuntime without(cfg, default_registry(), make_protocol_servers);
    ADD_FAILURE();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no reconstruction method 'gridding-averaged'"), std::string::npos)
        << e.what();
  }
  StreamRuntime p(cfg, reg, make_protocol_servers);
  Collector got;
  got.attach(p);
  p.start();
  const Simulator sim(small_sim());
  const auto spokes = sim.spokes(0, 96);
  send_paced(cfg.stream.endpoint, sim, spokes, 12);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames + p.metrics().frames_skipped >= 5; }));
  p.stop();
  EXPECT_EQ(p.metrics().frames_failed.load(), 0u);
  const auto frames = got.get();
  ASSERT_GE(frames.size(), 3u);
  ReconChain offline(cfg.recon, Backend::Cpu, reg);
  offline.configure(sim.header().geometry(32));
  for (std::size_t k = 0; k < frames.size(); ++k) {  // in order, none skipped: the offline state follows
    const FrameResult& f = frames[k];
    ASSERT_EQ(f.first_spoke, 16 * k);
    const Frame ref = frame_from_spokes(sim.header(), std::span(spokes).subspan(f.first_spoke, 32));
    const auto img = offline.reconstruct(ref);
    const double e = rel_error(f.image, std::vector<cfloat>(img.data, img.data + img.size()));
    std::printf("example method, frame %llu: streamed vs offline %.3g\n", (unsigned long long)f.number, e);
    EXPECT_LE(e, 1e-6);
  }
}

TEST(Stream, RecordThenReplayIsByteIdentical) {
  test::TempDir dir;
  const std::string file = dir / "rec.h5";
  const Simulator sim(small_sim());
  zmq::context_t ctx(1);
  // 1. A sender streams; the test captures every message as received.
  std::vector<wire::Parts> original;
  {
    zmq::socket_t pull(ctx, zmq::socket_type::pull);
    pull.set(zmq::sockopt::rcvtimeo, 5000);
    pull.bind(tcp(26102));
    SenderParams sp;
    sp.endpoint = tcp(26102);
    Sender s(ctx, sp, 21);
    s.send_header(stream_header_to_xml(sim.header()));
    for (const Spoke& spoke : sim.spokes(0, 40)) {
      Spoke x = spoke;
      x.header.acquired_ns = monotonic_ns();
      s.send_spoke(x);
    }
    s.close();
    for (;;) {
      auto parts = recv_parts(pull);
      ASSERT_FALSE(parts.empty()) << "timed out after " << original.size() << " messages";
      const auto t = type_of(parts);
      original.push_back(std::move(parts));
      if (t == std::uint16_t(wire::MsgType::Close)) break;
    }
  }
  // 2. The ingest records them.
  Metrics metrics;
  IngestParams ip;
  ip.endpoint = "inproc://record";
  {
    RecordOptions o;
    o.path = file;
    o.max_queue_bytes = 1 << 26;
    Recorder rec(o, metrics);
    ZmqIngest in(ctx, ip, metrics, false, 64, &rec);
    for (const auto& parts : original) in.handle(spans(parts));
    rec.stop();
    EXPECT_EQ(rec.written(), 40u);
  }
  // 3. Replay through the program; capture again.
  std::vector<wire::Parts> replayed;
  {
    zmq::socket_t pull(ctx, zmq::socket_type::pull);
    pull.set(zmq::sockopt::rcvtimeo, 10000);
    pull.bind(tcp(26103));
    auto replay = std::async(std::launch::async, [&] {
      return test::run_command(test::radstream_binary() + " replay " + file + " --endpoint " + tcp(26103) +
                               " --speed max");
    });
    for (;;) {
      auto parts = recv_parts(pull);
      ASSERT_FALSE(parts.empty()) << "timed out after " << replayed.size() << " messages";
      const auto t = type_of(parts);
      replayed.push_back(std::move(parts));
      if (t == std::uint16_t(wire::MsgType::Close)) break;
    }
    const auto r = replay.get();
    EXPECT_EQ(r.exit_code, 0) << r.output;
  }
  auto spoke_msgs = [](const std::vector<wire::Parts>& v) {
    std::vector<wire::Parts> s;
    for (const auto& p : v)
      if (type_of(p) == std::uint16_t(wire::MsgType::Spoke)) s.push_back(p);
    return s;
  };
  const auto a = spoke_msgs(original), b = spoke_msgs(replayed);
  ASSERT_EQ(a.size(), 40u);
  ASSERT_EQ(b.size(), 40u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    for (std::size_t k = 0; k < a[i].size(); ++k)
      EXPECT_TRUE(a[i][k] == b[i][k]) << "spoke " << i << " frame " << k;
  }
  // The same header text, and identical frames from both streams.
  EXPECT_EQ(original.front()[1], replayed.front()[1]);
  Metrics m1, m2;
  IngestParams i1, i2;
  i1.endpoint = "inproc://a";
  i2.endpoint = "inproc://b";
  ZmqIngest in1(ctx, i1, m1, false, 64), in2(ctx, i2, m2, false, 64);
  for (const auto& p : original) in1.handle(spans(p));
  for (const auto& p : replayed) in2.handle(spans(p));
  Frame f1(sim.header().geometry(32)), f2(sim.header().geometry(32));
  SpokeRing::WindowTimes t1, t2;
  ASSERT_TRUE(in1.state().ring->copy_window(40, f1, t1));
  ASSERT_TRUE(in2.state().ring->copy_window(40, f2, t2));
  EXPECT_EQ(std::memcmp(f1.data.data(), f2.data.data(), f1.data.size() * sizeof(cfloat)), 0);
  EXPECT_EQ(std::memcmp(f1.traj.data(), f2.traj.data(), f1.traj.size() * sizeof(float)), 0);
}

TEST(Stream, EveryBadInputIsCountedAndThePipelineGoesOn) {
  RunConfig cfg = config(26104);
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const Simulator sim(small_sim());
  const auto spokes = sim.spokes(0, 70);
  zmq::context_t ctx(1);
  zmq::socket_t push(ctx, zmq::socket_type::push);
  push.connect(cfg.stream.endpoint);
  auto send = [&](const wire::Parts& parts) {
    for (std::size_t i = 0; i < parts.size(); ++i) {
      zmq::message_t m(parts[i].data(), parts[i].size());
      push.send(m, i + 1 < parts.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
    }
  };
  auto env = [](std::uint64_t seq, std::uint64_t index) {
    wire::Envelope e;
    e.type = std::uint16_t(wire::MsgType::Spoke);
    e.sequence = seq;
    e.stream_id = 5;
    e.spoke_index = index;
    e.angle = std::nan("");
    return e;
  };
  auto good = [&](std::uint64_t seq) { return wire::encode_spoke(env(seq, seq - 1), spokes[seq - 1]); };
  wire::Envelope he;
  he.type = std::uint16_t(wire::MsgType::Header);
  he.stream_id = 5;  // the stream's own id, as on every message of it
  const std::string xml = stream_header_to_xml(sim.header());

  // Spokes before any header are held for their stream's header: one of another stream (6) is dropped as
  // no_header when stream 5's spoke comes; stream 5's spoke 1 is taken once its header comes.
  wire::Envelope other = env(1, 0);
  other.stream_id = 6;
  send(wire::encode_spoke(other, spokes[0]));
  send(good(1));
  send(wire::encode_text(he, xml));
  for (std::uint64_t s = 2; s <= 32; ++s) send(good(s));
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 1; }));

  auto bad = good(33);
  bad[0].resize(50);
  send(bad);  // envelope size
  bad = good(33);
  bad[0][1] = std::byte{0};
  send(bad);  // magic
  bad = good(33);
  bad[0][4] = std::byte{9};
  send(bad);  // version
  bad = good(33);
  bad[0][25] ^= std::byte{0xff};
  send(bad);  // checksum
  wire::Envelope ue = env(33, 32);
  ue.type = 2000;
  send(wire::encode_bare(ue));  // unknown type
  bad = good(33);
  for (int i = 0; i < 6; ++i) bad.push_back({std::byte{1}});
  send(bad);  // too many frames
  Spoke many = spokes[32];
  many.coils = 200;
  many.data.assign(std::size_t(200) * many.samples, cfloat(1, 0));
  send(wire::encode_spoke(env(33, 32), many));  // coils beyond the limit
  bad = good(33);
  bad[3].resize(bad[3].size() - 16);
  send(bad);  // data size
  Spoke nan = spokes[32];
  nan.data[7] = cfloat(std::nanf(""), 0);
  send(wire::encode_spoke(env(33, 32), nan));  // non-finite
  ASSERT_FALSE(spokes[32].traj.empty());
  for (float huge :
       {2e7f, 1e30f, -1e9f}) {  // finite, and far outside k-space: used to crash the CPU gridding
    Spoke far = spokes[32];
    far.traj[5] = huge;
    send(wire::encode_spoke(env(33, 32), far));
  }
  Spoke two = spokes[32];
  two.coils = 2;
  two.data.resize(std::size_t(2) * two.samples);
  send(wire::encode_spoke(env(33, 32), two));  // geometry mismatch
  send(good(32));                              // duplicate
  send(good(34));                              // 33 missing ...
  send(good(33));                              // ... and late
  send(wire::encode_text(he, "<not xml"));     // bad header text
  for (std::uint64_t s = 35; s <= 70; ++s) send(good(s));

  ASSERT_TRUE(eventually(
      [&] { return p.metrics().spokes >= 69 && p.metrics().frames + p.metrics().frames_skipped >= 3; }));
  std::this_thread::sleep_for(100ms);
  p.stop();
  const Metrics& m = p.metrics();
  using R = wire::Reject;
  for (R r : {R::NoHeader, R::EnvelopeSize, R::Magic, R::Version, R::Checksum, R::UnknownType, R::PartCount,
              R::Limits, R::DataSize, R::NonFinite, R::GeometryMismatch, R::Duplicate, R::Late, R::BadText})
    EXPECT_EQ(m.rejected[int(r)].load(), 1u) << wire::to_string(r);
  EXPECT_EQ(m.rejected[int(R::TrajRange)].load(), 3u);
  EXPECT_EQ(m.held_before_header.load(), 2u);
  EXPECT_EQ(m.spokes.load(), 69u);  // 70 good ones, minus the late one (counted, not framed)
  EXPECT_EQ(m.missing.load(), 0u);  // 33 came late
  EXPECT_GE(m.frames.load(), 2u);   // frames after the bad messages too
  EXPECT_EQ(m.frames_failed.load(), 0u);
}

TEST(Stream, PubSubGapsAreDetected) {
  RunConfig cfg = config(26105);
  cfg.stream.socket = ReceiveSocket::Sub;
  cfg.stream.bind = false;
  const Registry reg = default_registry();
  const Simulator sim(small_sim());
  const auto spokes = sim.spokes(0, 40);
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = cfg.stream.endpoint;
  sp.socket = SendSocket::Pub;
  sp.bind = true;
  Sender s(ctx, sp, 31);
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const std::string xml = stream_header_to_xml(sim.header());
  // A subscriber joins late (ZeroMQ's slow joiner): repeat the header until it is heard.
  ASSERT_TRUE(eventually([&] {
    s.send_header(xml);
    std::this_thread::sleep_for(20ms);
    return p.metrics().headers > 0;
  }));
  std::uint64_t sent = 0;
  for (std::uint64_t seq = 1; seq <= 40; ++seq) {
    if (seq == 5 || seq == 6 || seq == 7 || seq == 15) continue;  // lost on the way
    wire::Envelope e;
    e.type = std::uint16_t(wire::MsgType::Spoke);
    e.sequence = seq;
    e.stream_id = 31;
    e.spoke_index = seq - 1;
    e.angle = spokes[seq - 1].header.angle;
    s.send_parts(wire::encode_spoke(e, spokes[seq - 1]));
    ++sent;
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_TRUE(eventually([&] { return p.metrics().spokes >= sent; }));
  p.stop();
  EXPECT_EQ(p.metrics().missing.load(), 4u);
  EXPECT_EQ(p.metrics().gaps.load(), 2u);
}

TEST(Stream, SenderKilledAndRestartedMidStream) {
  RunConfig cfg = config(26106);
  cfg.stream.sender_timeout_s = 0.2;
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const Simulator sim(small_sim());
  const auto spokes = sim.spokes(0, 80);
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = cfg.stream.endpoint;
  sp.linger_ms = 0;
  {
    Sender a(ctx, sp, 1);
    a.send_header(stream_header_to_xml(sim.header()));
    for (int i = 0; i < 40; ++i) a.send_spoke(spokes[i]);
    ASSERT_TRUE(eventually([&] { return p.metrics().spokes >= 40; }));
  }  // gone without a close
  ASSERT_TRUE(eventually([&] { return p.metrics().sender_lost.load(); }, 3s));
  const auto frames_before = p.metrics().frames.load() + p.metrics().frames_skipped.load();
  sp.linger_ms = 2000;
  {
    Sender b(ctx, sp, 2);
    b.send_header(stream_header_to_xml(sim.header()));
    for (int i = 40; i < 80; ++i) b.send_spoke(spokes[i]);
    b.close();
  }
  ASSERT_TRUE(eventually([&] { return p.metrics().spokes >= 80; }));
  // The restarted sender is a new stream: its frames start over (window 32, stride 16: 40 spokes make one),
  // never mixing its spokes with those of the sender that died.
  ASSERT_TRUE(
      eventually([&] { return p.metrics().frames + p.metrics().frames_skipped >= frames_before + 1; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(p.metrics().frames + p.metrics().frames_skipped, frames_before + 1);
  p.stop();
  EXPECT_FALSE(p.metrics().sender_lost.load());
  EXPECT_EQ(p.metrics().streams.load(), 2u);
  EXPECT_EQ(p.metrics().missing.load(), 0u);
}

TEST(Stream, RunAndSimulateProgramsOverTcp) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  auto run = std::async(std::launch::async, [&] {
    return test::run_command(
        bin + " run --headless --endpoint " + tcp(26107) +
        " --backend cpu --window 64 --stride 16 --no-skip --until-close --duration 30 --metrics-json " +
        (dir / "m.json") + " --images " + (dir / "img") + " --record " + (dir / "rec.h5"));
  });
  std::this_thread::sleep_for(300ms);
  const auto sim = test::run_command(bin + " simulate --endpoint " + tcp(26107) +
                                     " --matrix 64 --coils 4 --rate 2000 --spokes 400 --motion --snr 30");
  EXPECT_EQ(sim.exit_code, 0) << sim.output;
  const auto r = run.get();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("spokes=400"), std::string::npos) << r.output;
  std::ifstream j(dir / "m.json");
  const std::string json((std::istreambuf_iterator<char>(j)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"spokes\": 400"), std::string::npos) << json;
  EXPECT_NE(json.find("\"missing\": 0"), std::string::npos) << json;
  EXPECT_TRUE(std::filesystem::exists(dir / "img/frame_000010.png"));
  const MrdRecording rec = read_mrd(dir / "rec.h5");
  EXPECT_EQ(rec.spokes.size(), 400u);
}

// A recording cannot fail silently: its folder is made; an existing file is refused (exit 3 naming it) unless
// --overwrite; an unwritable place is refused at start; the runtime reports what was written.
TEST(Stream, RecordingChecksItsPathAndNeverReplacesAFileSilently) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const std::string rec = dir / "new/sub/folder/rec.h5";
  auto run_with = [&](const std::string& args, int port) {
    auto run = std::async(std::launch::async, [&, args, port] {
      return test::run_command(bin + " run --headless --backend cpu --endpoint " + tcp(port) +
                               " --window 32 --stride 16 --until-close --duration 20 " + args);
    });
    std::this_thread::sleep_for(300ms);
    const auto sim = test::run_command(bin + " simulate --endpoint " + tcp(port) +
                                       " --matrix 32 --coils 2 --rate 4000 --spokes 100 --snr 30");
    EXPECT_EQ(sim.exit_code, 0) << sim.output;
    return run.get();
  };
  auto r = run_with("--record " + rec, 26111);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_mrd(rec).spokes.size(), 100u);
  EXPECT_NE(r.output.find("recording: 100 spokes in " + rec), std::string::npos) << r.output;
  const auto size = std::filesystem::file_size(rec);
  // The same name again: refused before anything is received, the first recording intact.
  r = test::run_command(bin + " run --headless --backend cpu --endpoint " + tcp(26112) +
                        " --duration 1 --record " + rec);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find(rec + " exists"), std::string::npos) << r.output;
  EXPECT_EQ(std::filesystem::file_size(rec), size);
  // Allowed with --overwrite.
  r = run_with("--overwrite --record " + rec, 26113);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_mrd(rec).spokes.size(), 100u);
  // A place that cannot be written: refused at start with the reason.
  r = test::run_command(bin + " run --headless --backend cpu --endpoint " + tcp(26114) +
                        " --duration 1 --record /proc/radstream/x.h5");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("/proc/radstream"), std::string::npos) << r.output;
}

// Ctrl-C (SIGINT) or SIGTERM in the middle of a recording leaves a complete file: every spoke
// the run received is in it, readable by radstream's reader and reconstructable; the run exits 0 and says
// what it wrote. (Also a file in /proc, and a run whose file cannot be made, exit 3: the test above.)
TEST(Stream, ARecordingInterruptedBySigintOrSigtermIsCompleteAndReplayable) {
  const std::string bin = test::radstream_binary();
  int port = 26121;
  for (const char* sig : {"INT", "TERM"}) {
    test::TempDir dir;
    const std::string rec = dir / "rec.h5", metrics = dir / "m.json";
    // The simulator streams 3000 spokes at 1000/s; the run is signalled after about 1.2 s, mid-stream.
    const std::string script =
        bin + " run --headless --backend cpu --endpoint " + tcp(port) +
        " --window 32 --stride 16 --duration 60" + " --record " + rec + " --metrics-json " + metrics + " > " +
        (dir / "run.log") + " 2>&1 & pid=$!; " + bin + " simulate --endpoint " + tcp(port) +
        " --matrix 32 --coils 2 --rate 1000 --spokes 3000 --snr 30" + " > " + (dir / "sim.log") +
        " 2>&1 & sim=$!; sleep 1.5; kill -" + sig + " $pid; wait $pid; echo RUN_RC=$?;" +
        " kill $sim 2>/dev/null; wait $sim 2>/dev/null; cat " + (dir / "run.log");
    ++port;
    const auto r = test::run_command(script);
    ASSERT_NE(r.output.find("RUN_RC=0"), std::string::npos) << sig << "\n" << r.output;
    std::ifstream mf(metrics);
    const auto m = nlohmann::json::parse(mf);
    const auto received = m.at("spokes").get<std::uint64_t>(),
               recorded = m.at("recorded").get<std::uint64_t>();
    const auto rec_file = read_mrd(rec);
    std::printf("SIG%s mid-stream: %llu spokes received, %llu recorded, %zu in the file\n", sig,
                (unsigned long long)received, (unsigned long long)recorded, rec_file.spokes.size());
    EXPECT_GT(received, 100u) << "the signal came mid-stream";
    EXPECT_LT(received, 3000u) << "the signal came mid-stream";
    EXPECT_EQ(recorded, received);
    EXPECT_EQ(rec_file.spokes.size(), received);
    EXPECT_NE(r.output.find("recording: " + std::to_string(received) + " spokes in " + rec),
              std::string::npos)
        << r.output;
    for (std::size_t i = 1; i < rec_file.spokes.size(); ++i)  // in order, none twice
      ASSERT_EQ(rec_file.spokes[i].header.spoke_index, rec_file.spokes[i - 1].header.spoke_index + 1) << i;
    const auto recon = test::run_command(bin + " recon --backend cpu --input " + rec +
                                         " --start 0 --count 64 --out " + (dir / "img.png"));
    EXPECT_EQ(recon.exit_code, 0) << recon.output;
  }
}

// A recording survives the process being killed (SIGKILL: no handler runs). The file is flushed
// every sinks.record_flush_s (1 s), so it is readable and holds every spoke up to the last flush, in order.
TEST(Stream, ARecordingSurvivesSigkillUpToItsLastFlush) {
  const std::string bin = test::radstream_binary();
  test::TempDir dir;
  const std::string rec = dir / "rec.h5";
  const std::string script =
      bin + " run --headless --backend cpu --endpoint " + tcp(26131) +
      " --window 32 --stride 16 --duration 60" + " --record " + rec + " > " + (dir / "run.log") +
      " 2>&1 & pid=$!; " + bin + " simulate --endpoint " + tcp(26131) +
      " --matrix 32 --coils 2 --rate 1000 --spokes 6000 > /dev/null 2>&1 & sim=$!; sleep 2.6; " +
      "kill -KILL $pid; wait $pid; echo RUN_RC=$?; kill $sim 2>/dev/null; wait $sim 2>/dev/null";
  const auto r = test::run_command(script);
  ASSERT_NE(r.output.find("RUN_RC=137"), std::string::npos) << r.output;
  const auto file = read_mrd(rec);
  std::printf("SIGKILL after about 2.3 s of spokes at 1000/s: %zu spokes readable in the file\n",
              file.spokes.size());
  EXPECT_GE(file.spokes.size(), 800u) << "at least the flush at 1 s";
  EXPECT_LT(file.spokes.size(), 3000u);
  for (std::size_t i = 1; i < file.spokes.size(); ++i)
    ASSERT_EQ(file.spokes[i].header.spoke_index, file.spokes[i - 1].header.spoke_index + 1) << i;
  const auto recon =
      test::run_command(bin + " recon --backend cpu --input " + rec + " --count 64 --out " + (dir / "x.png"));
  EXPECT_EQ(recon.exit_code, 0) << recon.output;
}

// `run` recording to DIR/rec.h5 with its metrics in DIR/m.json until the stream closes, started after
// `prefix` (shell settings or an environment assignment), fed `spokes` simulated spokes at 2000/s; the output
// carries RUN_RC=<exit status> and the run's log.
test::CommandResult recorded_run(const test::TempDir& dir, const std::string& prefix, int port, int spokes) {
  const std::string bin = test::radstream_binary();
  return test::run_command(
      "(" + prefix + " exec " + bin + " run --headless --backend cpu --endpoint " + tcp(port) +
      " --window 32 --stride 16 --until-close --duration 30 --record " + (dir / "rec.h5") +
      " --metrics-json " + (dir / "m.json") + ") > " + (dir / "run.log") + " 2>&1 & pid=$!; sleep 0.3; " +
      bin + " simulate --endpoint " + tcp(port) + " --matrix 32 --coils 2 --rate 2000 --spokes " +
      std::to_string(spokes) + " > /dev/null 2>&1; wait $pid; echo RUN_RC=$?; cat " + (dir / "run.log"));
}

// A disk that fills (here the file size limit, ulimit -f, with SIGXFSZ ignored as a full disk
// gives ENOSPC, not a signal): the recording stops while the file can still be closed, says so once, counts
// every spoke not recorded (RECORD_FAILED, record_failures), the reconstruction goes on, and the run exits 3.
// The file holds every spoke up to the stop and reads back.
TEST(Stream, ARecordingOnAFillingDiskStopsCleanlyAndTheRunFails) {
  test::TempDir dir;
  const std::string rec = dir / "rec.h5", metrics = dir / "m.json";
  const auto r = recorded_run(dir, "trap '' XFSZ; ulimit -f 8192;", 26132, 8000);
  EXPECT_NE(r.output.find("RUN_RC=3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("recording stopped and the file closed after"), std::string::npos) << r.output;
  std::ifstream mf(metrics);
  const auto m = nlohmann::json::parse(mf);
  const auto received = m.at("spokes").get<std::uint64_t>(), recorded = m.at("recorded").get<std::uint64_t>();
  EXPECT_EQ(received, 8000u);
  EXPECT_GT(m.at("frames").get<std::uint64_t>(), 0u);
  EXPECT_EQ(m.at("record_failures").get<std::uint64_t>(), received - recorded);
  const auto file = read_mrd(rec);
  std::printf("file size limit 8 MiB: %llu of %llu spokes recorded, %zu readable\n",
              (unsigned long long)recorded, (unsigned long long)received, file.spokes.size());
  EXPECT_EQ(file.spokes.size(), recorded);
  EXPECT_GT(recorded, 500u);
  EXPECT_LT(recorded, received);
}

// A write error in the middle of a file (forced after 300 spokes through the test hook): the counters say
// what a reader of the file finds. The spokes written after the last flush are not in the file, so they are
// counted as not recorded, never as recorded; recorded + record_failures = received.
TEST(Stream, AfterAWriteErrorTheCountersEqualWhatTheFileHolds) {
  test::TempDir dir;
  const std::string rec = dir / "rec.h5", metrics = dir / "m.json";
  const auto r = recorded_run(dir, "RADSTREAM_TEST_RECORD_FAIL_AFTER=300", 26134, 2000);
  EXPECT_NE(r.output.find("RUN_RC=3"), std::string::npos) << r.output;
  std::ifstream mf(metrics);
  const auto m = nlohmann::json::parse(mf);
  const auto received = m.at("spokes").get<std::uint64_t>(), recorded = m.at("recorded").get<std::uint64_t>();
  EXPECT_EQ(received, 2000u);
  const auto file = read_mrd(rec);
  std::printf("write error after 300 spokes: %llu recorded by the counters, %zu in the file\n",
              (unsigned long long)recorded, file.spokes.size());
  EXPECT_EQ(file.spokes.size(), recorded) << r.output;
  EXPECT_LE(recorded, 300u);
  EXPECT_EQ(m.at("record_failures").get<std::uint64_t>(), received - recorded);
}

// A run killed 0.8 s after it started (its stream about half a second old, before the periodic flush at 1 s)
// still leaves a readable file with the spokes of its first flush (within 0.2 s of the file's start), not an
// empty or torn one.
TEST(Stream, ARecordingKilledEarlyHoldsItsFirstFlush) {
  const std::string bin = test::radstream_binary();
  test::TempDir dir;
  const std::string rec = dir / "rec.h5";
  const std::string script =
      bin + " run --headless --backend cpu --endpoint " + tcp(26137) +
      " --window 32 --stride 16 --duration 60" + " --record " + rec + " > " + (dir / "run.log") +
      " 2>&1 & pid=$!; sleep 0.2; " + bin + " simulate --endpoint " + tcp(26137) +
      " --matrix 32 --coils 2 --rate 1000 --spokes 6000 > /dev/null 2>&1 & sim=$!; sleep 0.6; " +
      "kill -KILL $pid; wait $pid; echo RUN_RC=$?; kill $sim 2>/dev/null; wait $sim 2>/dev/null";
  const auto r = test::run_command(script);
  ASSERT_NE(r.output.find("RUN_RC=137"), std::string::npos) << r.output;
  const auto file = read_mrd(rec);
  std::printf("SIGKILL 0.8 s after the start: %zu spokes readable\n", file.spokes.size());
  EXPECT_GE(file.spokes.size(), 50u) << "the first flush within 0.2 s";
  for (std::size_t i = 1; i < file.spokes.size(); ++i)
    ASSERT_EQ(file.spokes[i].header.spoke_index, file.spokes[i - 1].header.spoke_index + 1) << i;
}

// One file per stream, never over an existing file, at most sinks.record_max_files per run:
// a stream beyond the cap is not recorded, and that is an error the run reports (exit 3).
TEST(Stream, RecordingFilesAreCappedPerRunAndNeverReplaceAFile) {
  const std::string bin = test::radstream_binary();
  test::TempDir dir;
  { std::ofstream(dir / "rec_2.h5") << "someone else's file"; }
  { std::ofstream(dir / "c.yaml") << "sinks:\n  record_max_files: 2\n"; }
  std::string script = bin + " run -c " + (dir / "c.yaml") + " --headless --backend cpu --endpoint " +
                       tcp(26133) + " --window 32 --stride 16 --duration 8 --record " + (dir / "rec.h5") +
                       " > " + (dir / "run.log") + " 2>&1 & pid=$!; sleep 0.3; ";
  // Three streams, one after the other, each closed and taken in before the next starts: a sender that starts
  // while the previous stream's close is still queued is foreign_stream by design (one stream per pipeline),
  // and ZeroMQ's fair queueing interleaves two senders' backlogs (seen on a 16-core GPU host).
  for (int k = 0; k < 3; ++k)
    script += bin + " simulate --endpoint " + tcp(26133) +
              " --matrix 16 --coils 1 --rate 2000 --spokes 100 " + "> /dev/null 2>&1; sleep 0.5; ";
  script += "wait $pid; echo RUN_RC=$?; cat " + (dir / "run.log");
  const auto r = test::run_command(script);
  EXPECT_NE(r.output.find("RUN_RC=3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("limit of 2 recording files"), std::string::npos) << r.output;
  EXPECT_EQ(read_mrd(dir / "rec.h5").spokes.size(), 100u);
  std::ifstream other(dir / "rec_2.h5");
  std::string text;
  std::getline(other, text);
  EXPECT_EQ(text, "someone else's file");
  EXPECT_EQ(read_mrd(dir / "rec_3.h5").spokes.size(), 100u);
  EXPECT_FALSE(std::filesystem::exists(dir / "rec_4.h5"));
}

// A file from `simulate --out` is radstream's own: replay recognizes it (verbatim), paces it by its
// acquisition times (2 s of spokes take 2 s at --speed 1, +-2 %), and the close message carries the real
// count.
TEST(Stream, ReplayOfASimulatedFileRunsInRealTime) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  auto r = test::run_command(bin + " simulate --out " + dir / "s.h5" +
                             " --matrix 32 --coils 2 --spokes 400 --rate 200 --snr 30");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto run = std::async(std::launch::async, [&] {
    return test::run_command(bin + " run --headless --backend cpu --endpoint " + tcp(26115) +
                             " --window 32 --stride 16 --until-close --duration 20");
  });
  std::this_thread::sleep_for(300ms);
  const auto t0 = std::chrono::steady_clock::now();
  r = test::run_command(bin + " replay " + dir / "s.h5" + " --endpoint " + tcp(26115));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("verbatim"), std::string::npos) << r.output;  // not "a foreign file"
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("sent 400 spokes in ([0-9.]+) s"))) << r.output;
  const double paced = std::stod(m[1].str());
  // A PUSH sender cannot know what arrived; it says so and where to look.
  EXPECT_NE(r.output.find("push: no acknowledgement from the receiver"), std::string::npos) << r.output;
  std::printf("replay of 400 spokes at 200/s: %.3f s paced (%.3f s whole command)\n", paced, secs);
  EXPECT_NEAR(paced, 1.995, 0.04);  // spoke 0 at t = 0, spoke 399 at 399 / 200 s
  const auto got = run.get();
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("closed by the sender after 400 spokes (400 of them received, 0 missing; 400 "
                            "received over the run)"),
            std::string::npos)
      << got.output;
}

// Senders that know: an endpoint with an impossible port is refused naming it (exit 2); with nobody
// listening, simulate and replay fail after --wait seconds saying so (exit 3) instead of reporting spokes
// sent to nobody;
// --no-wait sends regardless.
TEST(Stream, SendersRefuseBadEndpointsAndWaitForAReceiver) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  auto r =
      test::run_command(bin + " simulate --endpoint tcp://127.0.0.1:99999 --spokes 10 --matrix 32 --coils 2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("99999"), std::string::npos) << r.output;
  r = test::run_command(bin + " simulate --endpoint " + tcp(26116) +
                        " --wait 0.5 --spokes 10 --matrix 32 --coils 2");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no receiver at " + tcp(26116)), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("sent 10"), std::string::npos) << r.output;
  ASSERT_EQ(test::run_command(bin + " simulate --out " + dir / "s.h5" + " --spokes 10 --matrix 32 --coils 2")
                .exit_code,
            0);
  r = test::run_command(bin + " replay " + dir / "s.h5" + " --endpoint " + tcp(26117) + " --wait 0.5");
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no receiver"), std::string::npos) << r.output;
  r = test::run_command(bin + " simulate --endpoint " + tcp(26118) +
                        " --no-wait --spokes 10 --rate 1000 --matrix 32 --coils 2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// One header cannot exhaust memory: a stream header inside the sample/coil limits whose spoke ring would need
// more than stream.max_ring_mib is rejected (counted, named) before anything is allocated, and the stream in
// hand goes on.
TEST(Stream, AHeaderWhoseRingIsTooLargeIsRejectedAndTheStreamGoesOn) {
  RunConfig cfg = config(26119);
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const Simulator sim(small_sim());
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = cfg.stream.endpoint;
  Sender s(ctx, sp, 7);
  s.send_header(stream_header_to_xml(sim.header()));
  const auto spokes = sim.spokes(0, 64);
  for (int i = 0; i < 32; ++i) s.send_spoke(spokes[i]);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 1; }));
  StreamHeader huge = sim.header();
  huge.samples = 16384;  // x 128 coils: a 32 GiB ring with the default window limits
  huge.coils = 128;
  huge.matrix = 4096;
  huge.readout_os = 4.f;
  s.send_header(stream_header_to_xml(huge));
  for (int i = 32; i < 64; ++i) s.send_spoke(spokes[i]);
  ASSERT_TRUE(eventually([&] { return p.metrics().spokes >= 64; }));
  p.stop();
  EXPECT_EQ(p.metrics().rejected[int(wire::Reject::Limits)].load(), 1u);
  EXPECT_EQ(p.metrics().reconfigurations.load(), 0u);
  EXPECT_GE(p.metrics().frames.load(), 2u);
}

// Through the real binary: a sender's text cannot forge a status line or drive the terminal (one
// printable line), and forged acquisition times (the far past, the future) are counted as clock_invalid and
// kept out of the latency figures instead of giving p50 = -3.2e12 ms.
TEST(Stream, ForgedClocksAndSenderTextDoNotPoisonMetricsOrLogs) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const int port = 26125;
  auto run = std::async(std::launch::async, [&] {
    return test::run_command(
        bin + " run --headless --backend cpu --endpoint " + tcp(port) +
        " --window 32 --stride 16 --no-skip --until-close --duration 20 --metrics-json " + (dir / "m.json"));
  });
  std::this_thread::sleep_for(300ms);
  const Simulator sim(small_sim());
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = tcp(port);
  Sender s(ctx, sp, 11);
  ASSERT_TRUE(s.wait_for_peer(std::chrono::milliseconds(5000)));
  s.send_header(stream_header_to_xml(sim.header()));
  s.send_text("t=99s fps=1000.0 spokes=123456 FORGED\n\x1b[2J\x1b[31mred\x07 and more");
  const auto spokes = sim.spokes(0, 96);
  for (int i = 0; i < 96; ++i) {
    SpokeHeader h = spokes[i].header;
    h.acquired_ns = i < 32 ? monotonic_ns() - 3'200'000'000'000'000
                           : (i < 64 ? monotonic_ns() + 5'000'000'000 : monotonic_ns());
    s.send_spoke(h, spokes[i]);
  }
  s.close();
  const auto r = run.get();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << "an escape sequence reached the log";
  EXPECT_EQ(r.output.find('\x07'), std::string::npos);
  const auto said = r.output.find("sender says: ");
  ASSERT_NE(said, std::string::npos) << r.output;
  const std::string line = r.output.substr(said, r.output.find('\n', said) - said);
  EXPECT_NE(line.find("FORGED ?[2J?[31mred? and more"), std::string::npos) << line;  // one line, printable
  std::ifstream mf(dir / "m.json");
  const auto m = nlohmann::json::parse(mf);
  const auto frames = m.at("frames").get<std::uint64_t>();
  const auto invalid = m.at("clock_invalid").get<std::uint64_t>();
  std::printf("forged clocks: %llu frames, %llu with an implausible sender time, e2e p50 %.3f ms\n",
              (unsigned long long)frames, (unsigned long long)invalid,
              m.at("latency_ms").at("end_to_end").at("p50").get<double>());
  EXPECT_GE(invalid, 2u);  // the frames whose newest spoke carried a forged time
  EXPECT_LT(invalid, frames);
  const double p50 = m.at("latency_ms").at("end_to_end").at("p50").get<double>();
  EXPECT_GE(p50, 0.0);
  EXPECT_LT(p50, 60000.0);
  EXPECT_GE(m.at("latency_ms").at("sender_lag").at("p50").get<double>(), 0.0);
}

// Through the real binary: one stream per pipeline. A second sender (another stream id, another
// geometry) that starts while the first one streams is refused as foreign_stream: it neither reconfigures the
// pipeline nor starts a recording file nor mixes its spokes into the frames. When the first stream closes,
// the next header is followed, and the run says so.
TEST(Stream, OneStreamPerPipelineASecondSenderWaitsForTheFirstToClose) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  const int port = 26126;
  auto run = std::async(std::launch::async, [&] {
    return test::run_command(bin + " run --headless --backend cpu --endpoint " + tcp(port) +
                             " --window 32 --stride 16 --no-skip --duration 4 --record " + (dir / "rec.h5") +
                             " --metrics-json " + (dir / "m.json"));
  });
  std::this_thread::sleep_for(300ms);
  const Simulator sim(small_sim());
  SimParams other = small_sim();
  other.matrix = 48;
  other.coils = 2;
  const Simulator sim2(other);
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = tcp(port);
  Sender a(ctx, sp, 1), b(ctx, sp, 2);
  ASSERT_TRUE(a.wait_for_peer(std::chrono::milliseconds(5000)));
  ASSERT_TRUE(b.wait_for_peer(std::chrono::milliseconds(5000)));
  const auto sa = sim.spokes(0, 64), sb = sim2.spokes(0, 80);
  a.send_header(stream_header_to_xml(sim.header()));
  for (int i = 0; i < 32; ++i) a.send_spoke(sa[i]);
  std::this_thread::sleep_for(200ms);
  b.send_header(stream_header_to_xml(sim2.header()));  // an intruder mid-stream
  for (int i = 0; i < 40; ++i) b.send_spoke(sb[i]);
  std::this_thread::sleep_for(200ms);
  for (int i = 32; i < 64; ++i) a.send_spoke(sa[i]);
  a.close();
  std::this_thread::sleep_for(200ms);
  b.send_header(stream_header_to_xml(sim2.header()));  // now its turn
  for (int i = 40; i < 80; ++i) b.send_spoke(sb[i]);
  b.close();
  const auto r = run.get();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream mf(dir / "m.json");
  const auto m = nlohmann::json::parse(mf);
  EXPECT_EQ(m.at("rejected").at("foreign_stream").get<int>(), 41) << m.dump(1);
  EXPECT_EQ(m.at("spokes").get<int>(), 64 + 40);
  EXPECT_EQ(m.at("missing").get<int>(), 0);
  EXPECT_EQ(m.at("reconfigurations").get<int>(), 1);  // only when stream 2 took over
  EXPECT_NE(r.output.find("stream 1 closed; now following stream 2"), std::string::npos) << r.output;
  EXPECT_EQ(read_mrd(dir / "rec.h5").spokes.size(), 64u);    // stream 1 alone
  EXPECT_EQ(read_mrd(dir / "rec_2.h5").spokes.size(), 40u);  // stream 2 from its turn
}

// Through the real binary: a sender blocked with nobody to take its spokes (a PUSH send with no
// receiver, or waiting for one to connect) stops within 0.5 s of Ctrl-C or SIGTERM.
TEST(Stream, BlockedSendersStopWithinHalfASecondOfASignal) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  ASSERT_EQ(
      test::run_command(bin + " simulate --out " + (dir / "s.h5") + " --spokes 64 --matrix 32 --coils 2")
          .exit_code,
      0);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"simulate --no-wait --endpoint " + tcp(26141) + " --matrix 32 --coils 2 --rate 2000 --spokes 1000000",
       "INT"},
      {"simulate --endpoint " + tcp(26142) + " --matrix 32 --coils 2 --spokes 100", "TERM"},
      {"replay " + (dir / "s.h5") + " --endpoint " + tcp(26143), "INT"},
      {"replay " + (dir / "s.h5") + " --no-wait --loop --endpoint " + tcp(26144), "TERM"}};
  for (const auto& [args, sig] : cases) {
    const auto r =
        test::run_command(bin + " " + args + " > " + (dir / "log") + " 2>&1 & pid=$!; sleep 1.5; " +
                          "t0=$(date +%s%N); kill -" + sig + " $pid; wait $pid; rc=$?; t1=$(date +%s%N); " +
                          "echo ELAPSED_MS=$(( (t1 - t0) / 1000000 )) RC=$rc; cat " + (dir / "log"));
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.output, m, std::regex("ELAPSED_MS=([0-9]+) RC=([0-9]+)"))) << r.output;
    const int ms = std::stoi(m[1].str());
    std::printf("SIG%s to `%s`: stopped in %d ms (exit %s)\n", sig.c_str(), args.substr(0, 40).c_str(), ms,
                m[2].str().c_str());
    EXPECT_LT(ms, 500) << args << "\n" << r.output;
    const int rc = std::stoi(m[2].str());  // 0 (simulate) or replay's documented 130, after its own message
    EXPECT_TRUE(rc == 0 || rc == 130) << r.output;
    EXPECT_TRUE(r.output.find("interrupted") != std::string::npos ||
                r.output.find("stopped") != std::string::npos)
        << "the sender's own clean stop, not a kill by the signal: " << r.output;
  }
}

// The same recording replayed twice into one receiver arrives whole both times (it used to be dropped as
// duplicates the second time: same stream id, same sequence numbers).
TEST(Stream, ARecordingReplayedTwiceIsReceivedTwice) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  ASSERT_EQ(test::run_command(bin + " simulate --out " + dir / "s.h5" + " --spokes 120 --matrix 32 --coils 2")
                .exit_code,
            0);
  RunConfig cfg = config(26128);
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  for (int k = 0; k < 2; ++k) {
    const auto r =
        test::run_command(bin + " replay " + dir / "s.h5" + " --speed max --endpoint " + cfg.stream.endpoint);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_TRUE(eventually([&] { return p.metrics().spokes >= std::uint64_t(120 * (k + 1)); }))
        << "replay " << k;
  }
  p.stop();
  EXPECT_EQ(p.metrics().spokes.load(), 240u);
  EXPECT_EQ(p.metrics().rejected[int(wire::Reject::Duplicate)].load(), 0u);
  EXPECT_EQ(p.metrics().missing.load(), 0u);
}

// CG-SENSE live. The coil maps come from a file (recon.sens, BART's layout), every frame warm-starts
// from the one before (no frame skipped), and each streamed frame equals the offline chain run over the same
// windows in the same order; the solver's report reaches the frames and the metrics.
TEST(Stream, CgSenseLiveEqualsOfflineReconOfTheSameWindows) {
  RunConfig cfg = small_config(26127, false);
  cfg.recon.method = ReconMethod::CgSense;
  cfg.recon.cg.iterations = 6;
  const Simulator maps_sim(small_sim());
  const Frame calib = frame_from_spokes(maps_sim.header(), maps_sim.spokes(0, 32));
  const HostBuffer<cfloat> maps =
      estimate_coil_maps(calib.data.view(), calib.traj.view(), maps_sim.header().matrix);
  test::TempDir dir;
  const int N = maps_sim.header().matrix, C = maps_sim.header().coils;
  write_cfl(dir / "sens", {N, N, 1, C}, maps.view().span());
  cfg.recon.cg.sens = dir / "sens.cfl";
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  std::mutex m;
  std::vector<FrameResult> frames;
  p.on_frame([&](const FrameResult& f) {
    std::lock_guard lock(m);
    frames.push_back(f);
  });
  p.start();
  const Simulator sim(small_sim());
  const auto spokes = sim.spokes(0, 96);
  send_paced(cfg.stream.endpoint, sim, spokes, 12);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 5; }));
  p.stop();
  EXPECT_EQ(p.metrics().frames_skipped.load(), 0u);
  EXPECT_EQ(p.metrics().frames_failed.load(), 0u);
  EXPECT_EQ(p.metrics().last_iterations.load(), 6);
  std::lock_guard lock(m);
  ASSERT_GE(frames.size(), 3u);
  ReconChain offline(cfg.recon, Backend::Cpu, reg);
  offline.configure(sim.header().geometry(32));
  offline.set_coil_maps(maps.view());
  for (const auto& f : frames) {
    const Frame ref = frame_from_spokes(sim.header(), std::span(spokes).subspan(f.first_spoke, 32));
    const auto img = offline.reconstruct(ref);
    const double e = rel_error(f.image, std::vector<cfloat>(img.data, img.data + img.size()));
    std::printf(
        "cg-sense frame %llu (spokes %llu..%llu): %d iterations, residual %.3g; streamed vs offline %.3g\n",
        (unsigned long long)f.number, (unsigned long long)f.first_spoke, (unsigned long long)f.last_spoke,
        f.iterations, f.residual, e);
    EXPECT_EQ(f.iterations, 6);
    EXPECT_LE(e, 1e-5);
  }
}

// NLINV live: every frame warm-starts from the stream's previous solution and is regularized toward it (no
// frame skipped), and each streamed frame equals the offline chain run over the same windows in the same
// order; a new stream (reset_state) starts afresh: the first window again gives the first frame again.
namespace {
// An NLINV pipeline on `port` (CPU, no frame skipped) that collects its frames; not started.
struct NlinvRig {
  RunConfig cfg;
  Registry reg = default_registry();
  std::unique_ptr<StreamRuntime> runtime;
  Collector collected;
  NlinvRig(int port, int newton) : cfg(small_config(port, false)) {
    cfg.recon.method = ReconMethod::Nlinv;
    cfg.recon.nlinv.newton = newton;
    runtime = std::make_unique<StreamRuntime>(cfg, reg, make_protocol_servers);
    collected.attach(*runtime);
  }
};
}  // namespace

TEST(Stream, NlinvLiveEqualsOfflineReconOfTheSameWindows) {
  NlinvRig rig(26156, 5);
  const RunConfig& cfg = rig.cfg;
  const Registry& reg = rig.reg;
  StreamRuntime& p = *rig.runtime;
  Collector& collected = rig.collected;
  p.start();
  const Simulator sim(small_sim());
  const auto spokes = sim.spokes(0, 96);
  send_paced(cfg.stream.endpoint, sim, spokes, 12);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 5; }, 60s));
  p.stop();
  EXPECT_EQ(p.metrics().frames_skipped.load(), 0u);
  EXPECT_EQ(p.metrics().frames_failed.load(), 0u);
  const auto frames = collected.get();
  ASSERT_GE(frames.size(), 3u);
  ReconChain offline(cfg.recon, Backend::Cpu, reg);
  offline.configure(sim.header().geometry(32));
  std::vector<cfloat> first;
  for (const auto& f : frames) {
    const Frame ref = frame_from_spokes(sim.header(), std::span(spokes).subspan(f.first_spoke, 32));
    const auto img = offline.reconstruct(ref);
    const std::vector<cfloat> v(img.data, img.data + img.size());
    if (first.empty()) first = v;
    const double e = rel_error(f.image, v);
    std::printf("nlinv frame %llu (spokes %llu..%llu): %d CG iterations; streamed vs offline %.3g\n",
                (unsigned long long)f.number, (unsigned long long)f.first_spoke,
                (unsigned long long)f.last_spoke, f.iterations, e);
    EXPECT_GT(f.iterations, 5);  // at least one CG iteration per Newton step
    EXPECT_LE(e, 1e-5);
  }
  // The later frames differ from the first (warm start, temporal damping)...
  const auto img_last = offline.reconstruct(
      frame_from_spokes(sim.header(), std::span(spokes).subspan(frames.front().first_spoke, 32)));
  EXPECT_GT(rel_error(std::vector<cfloat>(img_last.data, img_last.data + img_last.size()), first), 1e-4);
  // ... and a new stream starts afresh.
  offline.reset_state();
  const auto again = offline.reconstruct(
      frame_from_spokes(sim.header(), std::span(spokes).subspan(frames.front().first_spoke, 32)));
  EXPECT_LE(rel_error(std::vector<cfloat>(again.data, again.data + again.size()), first), 1e-6);
  // The stage's own coil sensitivities: 3 coils of 32 x 32, non-zero, what the viewer's coil view shows.
  std::vector<cfloat> maps;
  ASSERT_EQ(offline.estimated_coil_maps(maps), 3);
  ASSERT_EQ(maps.size(), std::size_t(3) * 32 * 32);
  double power = 0;
  for (const auto& v : maps) power += std::norm(v);
  EXPECT_GT(power, 0.0);
}

// The viewer's coil view under nlinv (no per-coil images, no maps file): frames show |c_k| of the stage's own
// estimate.
TEST(Stream, NlinvCoilViewShowsItsEstimatedSensitivities) {
  NlinvRig rig(26157, 4);
  const RunConfig& cfg = rig.cfg;
  StreamRuntime& p = *rig.runtime;
  Collector& collected = rig.collected;
  p.set_coil_view(1);
  p.start();
  const Simulator sim(small_sim());
  send_paced(cfg.stream.endpoint, sim, sim.spokes(0, 64), 12);
  ASSERT_TRUE(eventually([&] { return p.metrics().frames >= 3; }, 60s));
  p.stop();
  const auto frames = collected.get();
  ASSERT_FALSE(frames.empty());
  for (const auto& f : frames) {
    EXPECT_EQ(f.coil, 1);
    double power = 0;
    for (const auto& v : f.image) {
      EXPECT_EQ(v.imag(), 0.f);
      EXPECT_GE(v.real(), 0.f);
      power += v.real();
    }
    EXPECT_GT(power, 0.0);
  }
}

// Through the real binary: 2,000 stream switches (a new stream id each time, a header then a close) write a
// bounded log: stream events at most 5 per 10 s, then one line with how many were left out; before, two
// lines per switch.
TEST(Stream, StreamSwitchesDoNotFloodTheLog) {
  const std::string bin = test::radstream_binary();
  const int port = 26129;
  auto run = std::async(std::launch::async, [&] {
    return test::run_command(bin + " run --headless --backend cpu --endpoint " + tcp(port) +
                             " --window 32 --stride 16 --duration 12");
  });
  std::this_thread::sleep_for(300ms);
  const Simulator sim(small_sim());
  const std::string xml = stream_header_to_xml(sim.header());
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = tcp(port);
  Sender s(ctx, sp, 1);
  ASSERT_TRUE(s.wait_for_peer(std::chrono::milliseconds(5000)));
  std::uint64_t seq = 0;
  constexpr int kStreams = 2000;
  for (std::uint32_t id = 1; id <= kStreams; ++id) {
    wire::Envelope e;
    e.stream_id = id;
    e.type = std::uint16_t(wire::MsgType::Header);
    e.sequence = seq++;
    s.send_parts(wire::encode_text(e, xml));
    e.type = std::uint16_t(wire::MsgType::Close);
    e.sequence = seq++;
    s.send_parts(wire::encode_bare(e));
  }
  const auto r = run.get();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::size_t ingest_lines = 0;
  for (std::size_t at = r.output.find("ingest:"); at != std::string::npos;
       at = r.output.find("ingest:", at + 1))
    ++ingest_lines;
  EXPECT_LT(ingest_lines, 40u) << r.output.substr(0, 4000);
  EXPECT_NE(r.output.find("more stream events since the last such line were not logged"), std::string::npos)
      << r.output.substr(0, 4000);
}

// A receiver started (or restarted) in the middle of a stream: the spokes that come before the stream's
// repeated header are held and taken once it comes, in order; none is lost or counted missing (before, every
// such spoke was dropped as no_header: 457 of 6,400 at a restart).
TEST(Stream, SpokesBeforeTheRepeatedHeaderAreKeptForIt) {
  RunConfig cfg = config(26110);
  cfg.frames.skip_when_behind = false;
  const Registry reg = default_registry();
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const Simulator sim(small_sim());
  const auto spokes = sim.spokes(0, 200);
  zmq::context_t ctx(1);
  SenderParams sp;
  sp.endpoint = cfg.stream.endpoint;
  Sender s(ctx, sp, 7);
  ASSERT_TRUE(s.wait_for_peer(std::chrono::milliseconds(5000)));
  for (int i = 0; i < 100; ++i) s.send_spoke(spokes[std::size_t(i)]);  // the header went to the old receiver
  std::this_thread::sleep_for(100ms);
  s.send_header(stream_header_to_xml(sim.header()));  // the repeated header
  for (int i = 100; i < 200; ++i) s.send_spoke(spokes[std::size_t(i)]);
  s.close();
  ASSERT_TRUE(eventually([&] { return p.metrics().spokes >= 200; }));
  std::this_thread::sleep_for(200ms);
  p.stop();
  const Metrics& m = p.metrics();
  EXPECT_EQ(m.spokes.load(), 200u);
  EXPECT_EQ(m.held_before_header.load(), 100u);
  EXPECT_EQ(m.rejected[int(wire::Reject::NoHeader)].load(), 0u);
  EXPECT_EQ(m.missing.load(), 0u);
  EXPECT_GE(m.frames.load(), 1u);
}

// Senders never hang: a receiver that goes away mid-stream is treated like a missing one (after --wait
// seconds: exit 3, "receiver at E gone after N spokes"), and simulate --duration D stops at D seconds of wall
// time with exit 0. Before, the sender blocked for ever once its receiver was gone.
TEST(Stream, SendersNeverHangWhenTheReceiverGoesAway) {
  const std::string bin = test::radstream_binary();
  test::TempDir dir;
  const auto timed = [&](const std::string& sender, const std::string& receiver_s, int port) {
    return test::run_command(bin + " run --headless --backend cpu --endpoint " + tcp(port) +
                             " --window 32 --stride 16 --duration " + receiver_s + " > " + (dir / "run.log") +
                             " 2>&1 & sleep 0.3; t0=$(date +%s%N); " + bin + " " + sender + " --endpoint " +
                             tcp(port) +
                             " 2>&1; echo SENDER_RC=$?; t1=$(date +%s%N); echo MS=$(((t1-t0)/1000000)); "
                             "wait");
  };
  const auto ms_of = [](const std::string& out) { return std::stol(out.substr(out.find("MS=") + 3)); };
  auto r = timed("simulate --matrix 32 --coils 2 --rate 2000 --spokes 1000000 --wait 2", "1.5", 26152);
  EXPECT_NE(r.output.find("SENDER_RC=3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gone after"), std::string::npos) << r.output;
  EXPECT_LT(ms_of(r.output), 9000) << r.output;
  r = timed("simulate --matrix 32 --coils 2 --rate 400 --duration 1", "4", 26153);
  EXPECT_NE(r.output.find("SENDER_RC=0"), std::string::npos) << r.output;
  EXPECT_LT(ms_of(r.output), 2500) << r.output;
  EXPECT_GE(ms_of(r.output), 900) << r.output;
}

// Recorded clocks are not latencies: a verbatim replay marks its stream header (kFlagRecordedClock), and run
// keeps its frames out of lag, end-to-end and glass latency (the status line says n/a) instead of reporting a
// recording's age as lag or counting CLOCK_INVALID; with --restamp the latencies are measured as usual.
TEST(Stream, AVerbatimReplaysRecordedClockIsNotReportedAsLatency) {
  const std::string bin = test::radstream_binary();
  test::TempDir dir;
  ASSERT_EQ(
      test::run_command(bin + " simulate --out " + (dir / "s.h5") + " --spokes 400 --matrix 32 --coils 2")
          .exit_code,
      0);
  for (const bool restamp : {false, true}) {
    const std::string m = dir / (restamp ? "m2.json" : "m1.json");
    const auto r = test::run_command(
        bin + " run --headless --backend cpu --endpoint " + tcp(26154) +
        " --window 32 --stride 16 --no-skip --until-close --duration 20 --metrics-json " + m +
        " 2>&1 & sleep 0.3; " + bin + " replay " + (dir / "s.h5") + " --speed 4 --endpoint " + tcp(26154) +
        (restamp ? " --restamp" : "") + " > /dev/null 2>&1; wait");
    std::ifstream mf(m);
    const auto j = nlohmann::json::parse(mf);
    EXPECT_GT(j.at("frames").get<int>(), 0) << r.output;
    EXPECT_EQ(j.at("clock_invalid").get<int>(), 0) << r.output;
    if (!restamp) {
      EXPECT_GT(j.at("recorded_clock_frames").get<int>(), 0) << r.output;
      EXPECT_EQ(j.at("latency_ms").at("end_to_end").at("count").get<int>(), 0) << j.dump(1);
      EXPECT_NE(r.output.find("lag=n/a (recorded timestamps; replay --restamp)"), std::string::npos)
          << r.output;
    } else {
      EXPECT_EQ(j.at("recorded_clock_frames").get<int>(), 0) << r.output;
      EXPECT_GT(j.at("latency_ms").at("end_to_end").at("count").get<int>(), 0) << j.dump(1);
    }
  }
}

// The close line counts the closing stream's own spokes: a second stream of 300 after one of 400 is "300 of
// them received", not 700 (the run's total is said apart).
TEST(Stream, TheCloseLineCountsTheStreamsOwnSpokes) {
  test::TempDir dir;
  const std::string bin = test::radstream_binary();
  ASSERT_EQ(test::run_command(bin + " simulate --out " + dir / "a.h5" + " --matrix 32 --coils 2 --spokes 400")
                .exit_code,
            0);
  ASSERT_EQ(test::run_command(bin + " simulate --out " + dir / "b.h5" + " --matrix 32 --coils 2 --spokes 300")
                .exit_code,
            0);
  auto run = std::async(std::launch::async, [&] {
    return test::run_command(bin + " run --headless --backend cpu --endpoint " + tcp(26119) +
                             " --window 32 --stride 16 --duration 14");
  });
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(
      test::run_command(bin + " replay " + dir / "a.h5" + " --speed max --endpoint " + tcp(26119)).exit_code,
      0);
  std::this_thread::sleep_for(10500ms);  // past the stream-event lines' limit (5 per 10 s)
  ASSERT_EQ(
      test::run_command(bin + " replay " + dir / "b.h5" + " --speed max --endpoint " + tcp(26119)).exit_code,
      0);
  const auto got = run.get();
  ASSERT_EQ(got.exit_code, 0) << got.output;
  EXPECT_NE(got.output.find("after 300 spokes (300 of them received, 0 missing; 700 received over the run)"),
            std::string::npos)
      << got.output;
}
