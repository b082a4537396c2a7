// A mutation fuzzer of valid MRD sessions: each session is a valid one (a config name, the XML header, noise
// scans, spokes, texts, queries, the close) whose messages are damaged in their values, never in their
// framing: header fields (flags, indices, sample and channel counts, trajectory dimensions, dwell time,
// echo centre), sizes with bodies that match them, NaN/Inf/huge samples and trajectories, repeated and
// swapped spokes, client texts with control bytes, JSON settings, unknown config names, XML numbers. So
// nearly every message is parsed and acted on, not only sent: the server's own count of messages read
// is asserted (200,000 here; scripts/mrd_fuzz.sh runs 1,000,000). The server never dies, every session
// ends, the images the clients read are the images the server counts as sent, and a clean session
// afterwards gets every frame.
#include <gtest/gtest.h>
#include <ismrmrd/ismrmrd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <future>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "ingest/protocols.hpp"
#include "recon/registry.hpp"
#include "sim/simulator.hpp"
#include "stream/mrd_test_client.hpp"
#include "stream/stream_runtime.hpp"
#include "stream/stream_test_util.hpp"

using namespace radstream;
using namespace radstream::streamtest;
using namespace radstream::mrdtest;
using namespace std::chrono_literals;

namespace {

using AcqHeader = ISMRMRD::ISMRMRD_AcquisitionHeader;

struct Acq {
  AcqHeader head;
  std::vector<float> traj;
  std::vector<cfloat> data;
};

// Puts an acquisition with bodies sized by its own header (the framing stays valid whatever the values).
void put_acquisition(RawClient& c, const Acq& a) {
  c.put<std::uint16_t>(1008);
  c.raw(&a.head, sizeof a.head);
  c.raw(a.traj.data(), a.traj.size() * 4);
  c.raw(a.data.data(), a.data.size() * 8);
}

// Resizes the bodies to the header's counts, keeping what values fit.
void fit_bodies(Acq& a) {
  a.traj.resize(std::size_t(a.head.number_of_samples) * a.head.trajectory_dimensions, 0.1f);
  a.data.resize(std::size_t(a.head.number_of_samples) * a.head.active_channels, cfloat(1e-3f, 0));
}

class Mutator {
 public:
  explicit Mutator(std::uint32_t seed, int max_samples, int max_coils)
      : rng_(seed), max_samples_(max_samples), max_coils_(max_coils) {}
  std::uint32_t operator()() { return rng_(); }
  bool one_in(std::uint32_t n) { return rng_() % n == 0; }

  // One value-level damage to an acquisition (its bodies refitted to its header).
  void damage(Acq& a) {
    AcqHeader& h = a.head;
    const float weird[] = {std::numeric_limits<float>::quiet_NaN(),
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           1e38f,
                           -1e38f,
                           0.f,
                           1e-45f};
    switch (rng_() % 12) {
      case 0:  // any flag now and then (the compression bits end a session), else one of ISMRMRD's first 40
        h.flags = one_in(50) ? (std::uint64_t(rng_()) << 32 | rng_()) : std::uint64_t(1) << (rng_() % 40);
        break;
      case 1:
        h.idx.kspace_encode_step_1 = std::uint16_t(rng_());
        h.idx.slice = std::uint16_t(one_in(2) ? rng_() % 4 : rng_());
        h.idx.repetition = std::uint16_t(rng_());
        break;
      case 2:
        h.number_of_samples = std::uint16_t(1 + rng_() % std::uint32_t(max_samples_));
        break;
      case 3:
        h.active_channels = std::uint16_t(one_in(50) ? 0 : 1 + rng_() % std::uint32_t(max_coils_));
        h.available_channels = h.active_channels;
        break;
      case 4:
        h.trajectory_dimensions = std::uint16_t(rng_() % 4);
        break;
      case 5:
        h.center_sample = std::uint16_t(rng_());
        h.discard_pre = std::uint16_t(rng_() % 64);
        h.discard_post = std::uint16_t(rng_() % 64);
        break;
      case 6:
        h.sample_time_us = weird[rng_() % 7];
        break;
      case 7:
        if (!a.data.empty()) a.data[rng_() % a.data.size()] = cfloat(weird[rng_() % 7], weird[rng_() % 7]);
        break;
      case 8:
        if (!a.traj.empty()) a.traj[rng_() % a.traj.size()] = weird[rng_() % 7];
        break;
      case 9:
        h.scan_counter = rng_();
        h.acquisition_time_stamp = rng_();
        break;
      case 10:
        h.user_int[4] = std::int32_t(rng_());  // radstream's 64-bit spoke index
        h.user_int[5] = std::int32_t(rng_() % 3);
        break;
      default:
        h.version = std::uint16_t(rng_());
        h.measurement_uid = rng_();
    }
    fit_bodies(a);
  }

  // A client text: printable, control bytes (ESC sequences, newlines forging log lines), or JSON settings.
  std::string text() {
    switch (rng_() % 4) {
      case 0:
        return "\x1b[2J\x1b[31mFAKE LOG LINE\nERR radstream: forged\r\n";
      case 1: {
        std::string s(rng_() % 200, ' ');
        for (auto& ch : s) ch = char(rng_());
        return s;
      }
      case 2:
        return R"({"parameters": {"window": )" + std::to_string(int(rng_() % 80) - 8) + R"(, "stride": )" +
               std::to_string(int(rng_() % 40) - 4) + "}}";
      default:
        return "{\"parameters\": {\"config\": \"" + config_name() + "\"}}";
    }
  }
  std::string config_name() {
    const char* names[] = {"gridding", "invertcontrast",  "nlinv", "../../etc/passwd", "record",
                           "",         "\x1b]0;title\x07"};
    return names[rng_() % 7];
  }
  // The XML header with one of its numbers replaced (a matrix, a channel count, a limit), or as it is.
  std::string xml(std::string x) {
    if (!one_in(8)) return x;
    std::size_t at = 0, n = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::isdigit(static_cast<unsigned char>(x[i])) && (i == 0 || x[i - 1] == '>')) ++n;
    if (n == 0) return x;
    std::size_t pick = rng_() % n;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (std::isdigit(static_cast<unsigned char>(x[i])) && (i == 0 || x[i - 1] == '>') && pick-- == 0) {
        at = i;
        break;
      }
    std::size_t end = at;
    while (end < x.size() && x[end] != '<') ++end;
    const char* values[] = {"0", "-64", "1000000000", "65536", "1", "1e9", "nan", "7"};
    return x.substr(0, at) + values[rng_() % 8] + x.substr(end);
  }

 private:
  std::mt19937 rng_;
  int max_samples_, max_coils_;
};

// Everything the server sends back, read as the protocol frames it: images, texts, query answers, the close.
struct Drained {
  std::size_t images = 0, texts = 0;
  bool closed = false;
};

Drained drain(RawClient& c) {
  Drained d;
  for (;;) {
    std::uint16_t id = 0;
    if (!c.read_exact(&id, 2)) return d;
    if (id == 4) {
      d.closed = true;
      return d;
    }
    if (id == 5) {
      std::uint32_t n = 0;
      std::string t;
      if (!c.read_exact(&n, 4)) return d;
      t.resize(n);
      if (!c.read_exact(t.data(), n)) return d;
      ++d.texts;
      for (char ch : t)  // a client's bytes never come back raw
        if (ch == '\x1b') ADD_FAILURE() << "an ESC byte in a text from the server";
      if (t.find(RADSTREAM_CONFIG_DIR) != std::string::npos)
        ADD_FAILURE() << "a text names the server's config folder: " << t;
    } else if (id == 7) {
      std::uint64_t corr = 0, n = 0;
      if (!c.read_exact(&corr, 8) || !c.read_exact(&n, 8) || n > 4096) return d;
      std::string t(n, '\0');
      if (!c.read_exact(t.data(), n)) return d;
    } else if (id == 1022) {
      ISMRMRD::ISMRMRD_ImageHeader h;
      std::uint64_t alen = 0;
      if (!c.read_exact(&h, 198) || !c.read_exact(&alen, 8) || alen > (1u << 20)) return d;
      std::string attr(alen, '\0');
      if (!c.read_exact(attr.data(), alen)) return d;
      const std::size_t elem = h.data_type == ISMRMRD::ISMRMRD_FLOAT     ? 4
                               : h.data_type == ISMRMRD::ISMRMRD_CXFLOAT ? 8
                                                                         : 2;
      std::vector<char> px(std::size_t(h.matrix_size[0]) * h.matrix_size[1] * h.matrix_size[2] * h.channels *
                           elem);
      if (!c.read_exact(px.data(), px.size())) return d;
      ++d.images;
    } else {
      ADD_FAILURE() << "unexpected message id " << id << " from the server";
      return d;
    }
  }
}

}  // namespace

TEST(MrdFuzz, MutatedValidSessionsAreParsedAndNeverHarmTheServer) {
  const Registry reg = default_registry();
  RunConfig cfg = mrd_config(26460, MrdPixels::Float);
  cfg.mrd.message_timeout_s = 2.0;
  cfg.mrd.idle_timeout_s = 0.5;
  cfg.mrd.max_sessions = 8;
  cfg.stream.max_samples = 128;
  cfg.stream.max_coils = 8;
  cfg.frames.window = 16;
  cfg.frames.stride = 16;
  StreamRuntime p(cfg, reg, make_protocol_servers);
  p.start();
  const int port = port_of(p.endpoint_of("mrd"));
  SimParams sp;
  sp.matrix = 16;
  sp.coils = 2;
  const Simulator sim(sp);
  const auto spokes = sim.spokes(0, 160);
  const std::string xml = stream_header_to_xml(sim.header());
  std::vector<Acq> valid;
  for (const auto& s : spokes) {
    Acq a;
    const auto h = acquisition_header_bytes(s.header, s.samples, s.coils, 2);
    std::memcpy(&a.head, h.data(), sizeof a.head);
    a.traj = s.traj;
    a.data = s.data;
    valid.push_back(std::move(a));
  }
  Acq noise = valid[0];
  noise.head.flags = std::uint64_t(1) << (ISMRMRD::ISMRMRD_ACQ_IS_NOISE_MEASUREMENT - 1);
  const char* env = std::getenv("RADSTREAM_MRD_FUZZ_PARSED");
  const std::uint64_t goal = env ? std::uint64_t(std::atoll(env)) : 200000;
  auto& mm = p.metrics().mrd;
  std::atomic<std::size_t> images_read{0}, sessions{0};
  // Four clients at a time, each its own stream of fuzzed sessions.
  const auto client = [&](std::uint32_t seed) {
    Mutator mut(seed, cfg.stream.max_samples, cfg.stream.max_coils);
    while (mm.messages.load() < goal) {
      RawClient c(port);
      if (!c.ok()) {
        ADD_FAILURE() << "the server stopped accepting";
        return;
      }
      if (!mut.one_in(4)) c.config_name(mut.one_in(8) ? mut.config_name() : "gridding");
      c.text(3, mut.xml(xml));
      for (int k = 0; k < 2; ++k) put_acquisition(c, noise);
      for (std::size_t i = 0; i < valid.size(); ++i) {
        Acq a = valid[mut.one_in(20) ? mut() % valid.size() : i];  // now and then a repeated spoke
        if (mut.one_in(5)) mut.damage(a);
        put_acquisition(c, a);
        if (mut.one_in(40)) c.text(5, mut.text());
        if (mut.one_in(60)) {  // a query
          const std::string q = mut.one_in(2) ? "ismrmrd::version" : mut.text();
          c.put<std::uint16_t>(6);
          c.put<std::uint64_t>(0);
          c.put<std::uint64_t>(mut());
          c.put<std::uint64_t>(q.size());
          c.raw(q.data(), q.size());
        }
      }
      if (!mut.one_in(20)) c.put<std::uint16_t>(4);  // most close; the others are timed out
      auto reply = std::async(std::launch::async, [&c] { return drain(c); });
      c.flush(1 + mut() % 65536);  // the server may end the session early: a failed send is fine
      const Drained d = reply.get();
      images_read += d.images;
      ++sessions;
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (std::uint32_t k = 0; k < 4; ++k) clients.emplace_back(client, 20261129u + k);
  for (auto& t : clients) t.join();
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(eventually([&] { return mm.sessions.load() == sessions.load(); }, 30s));
  ASSERT_TRUE(eventually(
      [&] {
        return mm.sessions_completed.load() + mm.sessions_failed.load() + mm.sessions_refused.load() +
                   mm.busy_refused.load() >=
               mm.sessions_admitted.load();
      },
      30s));
  std::printf(
      "mrd fuzz: %llu messages parsed (%llu acquisitions, %llu texts, %llu queries) in %zu sessions, %.1f s; "
      "sessions completed %llu, failed %llu, refused %llu; %zu images read, %llu sent\n",
      (unsigned long long)mm.messages.load(), (unsigned long long)mm.acquisitions.load(),
      (unsigned long long)mm.texts.load(), (unsigned long long)mm.queries.load(), sessions.load(), took,
      (unsigned long long)mm.sessions_completed.load(), (unsigned long long)mm.sessions_failed.load(),
      (unsigned long long)mm.sessions_refused.load(), images_read.load(),
      (unsigned long long)mm.images_sent.load());
  if (const char* path = std::getenv("RADSTREAM_MRD_FUZZ_JSON")) {  // scripts/mrd_fuzz.sh keeps the counts
    nlohmann::ordered_json j;
    j["test"] = "MrdFuzz.MutatedValidSessionsAreParsedAndNeverHarmTheServer";
    j["goal_messages_parsed"] = goal;
    j["seconds"] = took;
    j["client_sessions"] = sessions.load();
    j["client_images_read"] = images_read.load();
    j["server_mrd"] = {{"messages", mm.messages.load()},
                       {"acquisitions", mm.acquisitions.load()},
                       {"noise", mm.noise.load()},
                       {"non_imaging", mm.non_imaging.load()},
                       {"texts", mm.texts.load()},
                       {"queries", mm.queries.load()},
                       {"sessions", mm.sessions.load()},
                       {"sessions_completed", mm.sessions_completed.load()},
                       {"sessions_failed", mm.sessions_failed.load()},
                       {"sessions_refused", mm.sessions_refused.load()},
                       {"busy_refused", mm.busy_refused.load()},
                       {"images_sent", mm.images_sent.load()}};
    std::ofstream(path) << j.dump(1) << "\n";
  }
  EXPECT_GE(mm.messages.load(), goal);
  // Most messages reach the session whole: the damage is in values, not in the framing.
  EXPECT_GT(double(mm.messages.load()), 0.8 * double(sessions.load()) * double(valid.size() + 3));
  EXPECT_EQ(images_read.load(), mm.images_sent.load());
  EXPECT_GT(mm.images_sent.load(), 0u);
  // The server still serves a clean session whole.
  const auto frames = [&] {
    RawClient t(port);
    t.config_name("gridding");
    t.text(3, xml);
    for (const auto& a : valid) put_acquisition(t, a);
    t.put<std::uint16_t>(4);
    if (!t.flush()) return std::size_t(0);
    return t.read_until_close().images.size();
  };
  std::size_t got = 0;
  for (int tries = 0; tries < 50 && got == 0; ++tries) {  // the last fuzzed sessions may still hold places
    got = frames();
    if (got == 0) std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(got, valid.size() / 16);
  p.stop();
}
