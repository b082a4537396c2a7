// Decoder fuzzing: a few hundred thousand random and mutated messages through the decoder and through the
// ingest's whole message path (ring writes included). Nothing may crash, hang, or allocate beyond the limits;
// valid messages must still be accepted afterwards.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>

#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "stream/ingest.hpp"
#include "stream/wire.hpp"

using namespace radstream;
using namespace radstream::wire;

namespace {

std::vector<std::span<const std::byte>> spans(const Parts& p) {
  std::vector<std::span<const std::byte>> s;
  for (const auto& v : p) s.emplace_back(v.data(), v.size());
  return s;
}

}  // namespace

TEST(Fuzz, RandomAndMutatedMessagesNeverCrashTheDecoderOrTheIngest) {
  SimParams sp;
  sp.matrix = 16;
  sp.coils = 2;
  const Simulator sim(sp);
  const auto spokes = sim.spokes(0, 8);
  Envelope h;
  h.type = std::uint16_t(MsgType::Header);
  const Parts header = encode_text(h, stream_header_to_xml(sim.header()));
  std::vector<Parts> seeds{header};
  for (int i = 0; i < 8; ++i) {
    Envelope e;
    e.type = std::uint16_t(MsgType::Spoke);
    e.sequence = std::uint64_t(i + 1);
    e.stream_id = 7;
    e.spoke_index = std::uint64_t(i);
    e.angle = spokes[i].header.angle;
    seeds.push_back(encode_spoke(e, spokes[i]));
  }
  Envelope c;
  c.type = std::uint16_t(MsgType::Close);
  seeds.push_back(encode_bare(c));

  zmq::context_t ctx(1);
  Metrics metrics;
  IngestParams ip;
  ip.endpoint = "inproc://fuzz";
  ip.max_samples = 4096;
  ip.max_coils = 16;
  ip.sender_timeout_s = 0.05;  // the stream the fuzz left followed falls silent quickly (one stream per pipeline)
  Ingest ingest(ctx, ip, metrics, false, 16);
  Limits limits;
  limits.max_samples = 4096;
  limits.max_coils = 16;

  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int> byte(0, 255);
  long accepted = 0;
  const long n = 300000;
  for (long k = 0; k < n; ++k) {
    Parts p;
    const int mode = int(rng() % 4);
    if (mode == 0) {  // random frames
      p.resize(1 + rng() % 5);
      for (auto& f : p) {
        f.resize(rng() % 400);
        for (auto& b : f) b = std::byte(byte(rng));
      }
    } else {  // a valid message, mutated
      p = seeds[rng() % seeds.size()];
      const int edits = 1 + int(rng() % 4);
      for (int e = 0; e < edits; ++e) {
        auto& f = p[rng() % p.size()];
        switch (rng() % 4) {
          case 0:
            if (!f.empty()) f[rng() % f.size()] = std::byte(byte(rng));
            break;
          case 1:
            f.resize(rng() % (f.size() + 16));
            break;
          case 2:  // keep the checksum right so that deeper fields get exercised
            if (f.size() == 64) {
              f[8 + rng() % 48] = std::byte(byte(rng));
              const auto sum = fnv1a(std::span<const std::byte>(f.data(), 60));
              std::memcpy(f.data() + 60, &sum, 4);
            }
            break;
          default:
            if (p.size() > 1 && rng() % 2) p.pop_back();
            break;
        }
      }
    }
    const auto d = decode(spans(p), limits);
    if (d.ok) ++accepted;
    ingest.handle(spans(p));
  }
  std::printf("fuzz: %ld messages, %ld decoded as valid, %llu rejected by the ingest\n", n, accepted,
              static_cast<unsigned long long>(metrics.rejected_total()));
  EXPECT_GT(metrics.rejected_total(), std::uint64_t(n / 2));
  // The ingest still takes a valid stream afterwards, once the stream the fuzz left it following is silent.
  const std::uint64_t before = metrics.spokes.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Envelope h99 = h;
  h99.stream_id = 99;
  ingest.handle(spans(encode_text(h99, stream_header_to_xml(sim.header()))));
  for (int i = 1; i <= 8; ++i) {
    Envelope e;
    e.type = std::uint16_t(MsgType::Spoke);
    e.sequence = 1000000 + std::uint64_t(i);
    e.stream_id = 99;
    e.spoke_index = std::uint64_t(i - 1);
    e.angle = spokes[i - 1].header.angle;
    ingest.handle(spans(encode_spoke(e, spokes[i - 1])));
  }
  EXPECT_EQ(metrics.spokes.load(), before + 8);
}
