// The wire protocol: encode/decode round trips, every rejection reason with its message, and the sequence
// tracker (gaps, duplicates, late messages, a restarted sender).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "sim/simulator.hpp"
#include "stream/sequence_tracker.hpp"
#include "wire/wire.hpp"

using namespace radstream;
using namespace radstream::wire;

namespace {

Spoke test_spoke(int samples = 32, int coils = 3) {
  Spoke s;
  s.samples = samples;
  s.coils = coils;
  s.header.spoke_index = 77;
  s.header.acquired_ns = 123456789;
  s.header.angle = 0.5;
  s.traj.resize(2 * samples);
  spoke_coordinates(0.5, samples, s.traj);
  s.data.resize(std::size_t(samples) * coils);
  for (std::size_t i = 0; i < s.data.size(); ++i) s.data[i] = cfloat(float(i), -float(i));
  return s;
}

Envelope spoke_env(std::uint64_t seq = 1) {
  Envelope e;
  e.type = std::uint16_t(MsgType::Spoke);
  e.sequence = seq;
  e.stream_id = 42;
  e.spoke_index = 77;
  e.acquired_ns = 123456789;
  e.sent_ns = 123456999;
  e.angle = 0.5;
  return e;
}

DecodeResult dec(const Parts& p, const Limits& l = {}) {
  std::vector<std::span<const std::byte>> spans;
  for (const auto& v : p) spans.emplace_back(v.data(), v.size());
  return decode(spans, l);
}

void expect_reject(const Parts& p, Reject r, const char* words, const Limits& l = {}) {
  const auto d = dec(p, l);
  EXPECT_FALSE(d.ok);
  EXPECT_EQ(d.reason, r) << to_string(d.reason) << ": " << d.detail;
  EXPECT_NE(d.detail.find(words), std::string::npos) << d.detail;
}

}  // namespace

TEST(Wire, EnvelopeIs64BytesWithMagicAndChecksum) {
  const auto b = encode_envelope(spoke_env());
  EXPECT_EQ(b.size(), 64u);
  EXPECT_EQ(std::memcmp(b.data(), "RSTM", 4), 0);
  std::uint32_t sum;
  std::memcpy(&sum, b.data() + 60, 4);
  EXPECT_EQ(sum, fnv1a(std::span<const std::byte>(b.data(), 60)));
}

TEST(Wire, SpokeRoundTrip) {
  const Spoke s = test_spoke();
  const Parts parts = encode_spoke(spoke_env(9), s);  // the decoded spans point into these
  const auto d = dec(parts);
  ASSERT_TRUE(d.ok) << d.detail;
  EXPECT_EQ(d.msg.env.sequence, 9u);
  EXPECT_EQ(d.msg.env.stream_id, 42u);
  EXPECT_EQ(d.msg.samples, 32);
  EXPECT_EQ(d.msg.coils, 3);
  EXPECT_EQ(d.msg.traj_dims, 2);
  EXPECT_EQ(d.msg.head.spoke_index, 77u);
  EXPECT_EQ(d.msg.head.acquired_ns, 123456789);
  EXPECT_DOUBLE_EQ(d.msg.head.angle, 0.5);
  ASSERT_EQ(d.msg.data.size(), s.data.size() * sizeof(cfloat));
  EXPECT_EQ(std::memcmp(d.msg.data.data(), s.data.data(), d.msg.data.size()), 0);
  EXPECT_EQ(std::memcmp(d.msg.traj.data(), s.traj.data(), d.msg.traj.size()), 0);
}

TEST(Wire, ControlMessagesRoundTrip) {
  Envelope e = spoke_env(5);
  e.type = std::uint16_t(MsgType::Header);
  auto d = dec(encode_text(e, "<xml/>"));
  ASSERT_TRUE(d.ok);
  EXPECT_EQ(d.msg.text, "<xml/>");
  for (MsgType t : {MsgType::Close, MsgType::Heartbeat}) {
    e.type = std::uint16_t(t);
    d = dec(encode_bare(e));
    ASSERT_TRUE(d.ok);
    EXPECT_EQ(d.msg.env.type, std::uint16_t(t));
  }
}

TEST(Wire, EveryRejectionNamesItsReason) {
  const Spoke s = test_spoke();
  const Parts good = encode_spoke(spoke_env(), s);
  expect_reject({}, Reject::PartCount, "empty");
  Parts p = good;
  p[0].resize(60);
  expect_reject(p, Reject::EnvelopeSize, "60 bytes");
  p = good;
  p[0][0] = std::byte{'X'};
  expect_reject(p, Reject::Magic, "magic");
  p = good;
  p[0][4] = std::byte{7};
  expect_reject(p, Reject::Version, "version 7");
  p = good;
  p[0][30] ^= std::byte{1};
  expect_reject(p, Reject::Checksum, "checksum");
  Envelope e = spoke_env();
  e.type = 999;
  p = good;
  const auto env999 = encode_envelope(e);
  p[0].assign(env999.begin(), env999.end());
  expect_reject(p, Reject::UnknownType, "999");
  p = good;
  p.pop_back();
  expect_reject(p, Reject::PartCount, "3 frames");
  p = good;
  p[1].resize(300);
  expect_reject(p, Reject::AcqHeaderSize, "300 bytes");
  p = good;
  p[3].resize(p[3].size() - 8);
  expect_reject(p, Reject::DataSize, "3 coils x 32 samples");
  p = good;
  p[2].resize(p[2].size() + 4);
  expect_reject(p, Reject::TrajSize, "trajectory");
  Limits small;
  small.max_coils = 2;
  expect_reject(good, Reject::Limits, "coils 3 (1..2)", small);
  Spoke z = test_spoke();
  z.coils = 0;
  z.data.clear();
  expect_reject(encode_spoke(spoke_env(), z), Reject::Limits, "coils 0");
  e.type = std::uint16_t(MsgType::Header);
  expect_reject(encode_text(e, ""), Reject::BadText, "text of 0 bytes");
}

TEST(Wire, FiniteCheckFindsNanAndInfAnywhere) {
  std::vector<float> v(1000, 1.f);
  auto bytes = [&] {
    return std::span<const std::byte>(reinterpret_cast<const std::byte*>(v.data()), v.size() * 4);
  };
  EXPECT_TRUE(all_finite(bytes()));
  for (std::size_t at : {0u, 15u, 16u, 999u}) {
    v[at] = std::nanf("");
    EXPECT_FALSE(all_finite(bytes())) << at;
    v[at] = INFINITY;
    EXPECT_FALSE(all_finite(bytes())) << at;
    v[at] = 1.f;
  }
}

TEST(SequenceTracker, GapsDuplicatesLateAndRestart) {
  SequenceTracker t;
  using V = SequenceTracker::Verdict;
  EXPECT_EQ(t.see(1, 1), V::First);
  EXPECT_EQ(t.see(1, 2), V::InOrder);
  EXPECT_EQ(t.see(1, 5), V::Gap);  // 3 and 4 missing
  EXPECT_EQ(t.missing(), 2u);
  EXPECT_EQ(t.see(1, 4), V::Late);  // 4 turns up
  EXPECT_EQ(t.missing(), 1u);
  EXPECT_EQ(t.see(1, 4), V::Duplicate);
  EXPECT_EQ(t.see(1, 5), V::Duplicate);
  EXPECT_EQ(t.see(1, 6), V::InOrder);
  EXPECT_EQ(t.see(2, 1), V::NewStream);
  EXPECT_EQ(t.see(2, 2), V::InOrder);
  EXPECT_EQ(t.gaps(), 1u);
  EXPECT_EQ(t.duplicates(), 2u);
  EXPECT_EQ(t.late(), 1u);
  EXPECT_EQ(t.streams(), 2u);
  // A number far ahead is not believed at once (it used to make every later spoke a duplicate).
  EXPECT_EQ(t.see(2, 100000), V::Jump);
  EXPECT_EQ(t.see(2, 3), V::InOrder);  // the stream goes on
  EXPECT_EQ(t.see(2, 100000 + (1u << 21)), V::Jump);
  EXPECT_EQ(t.see(2, 4), V::InOrder);
  EXPECT_EQ(t.missing(), 1u);
  EXPECT_EQ(t.jumps(), 2u);
}

// A corrupted number loses nothing; a sender that really jumped is followed after three consecutive numbers.
TEST(SequenceTracker, AJumpAheadIsBelievedOnlyWhenConfirmed) {
  SequenceTracker t;
  using V = SequenceTracker::Verdict;
  for (std::uint64_t s = 1; s <= 40; ++s) {
    if (s == 20) {  // one corrupted number in the middle
      EXPECT_EQ(t.see(5, 1000000), V::Jump);
    }
    EXPECT_EQ(t.see(5, s), s == 1 ? V::First : V::InOrder) << s;
  }
  EXPECT_EQ(t.duplicates(), 0u);
  EXPECT_EQ(t.missing(), 0u);
  EXPECT_EQ(t.see(5, 9000), V::Jump);
  EXPECT_EQ(t.see(5, 9001), V::Jump);
  EXPECT_EQ(t.see(5, 9002), V::NewStream);  // confirmed
  for (std::uint64_t s = 9003; s <= 9050; ++s) EXPECT_EQ(t.see(5, s), V::InOrder) << s;
  EXPECT_EQ(t.see(5, 9001), V::Duplicate);  // part of the confirmed run
  EXPECT_EQ(t.duplicates(), 1u);
  EXPECT_EQ(t.jumps(), 1u);  // only the corrupted one stays counted
  // The numbers the confirmed jump skipped never came: 41..8999 are missing, one gap, still one stream.
  EXPECT_EQ(t.missing(), 8959u);
  EXPECT_EQ(t.gaps(), 1u);
  EXPECT_EQ(t.streams(), 1u);
}

// A tap (SUB) that loses more spokes than the window (6,451 here) reports them all missing, as a reader of
// the sender's count finds; it used to say 0.
TEST(SequenceTracker, AHoleWiderThanTheWindowIsCountedMissing) {
  SequenceTracker t;
  for (std::uint64_t s = 1; s <= 1000; ++s) t.see(9, s);
  for (std::uint64_t s = 1000 + 6452; s <= 12000; ++s) t.see(9, s);
  EXPECT_EQ(t.missing(), 6451u);
  EXPECT_EQ(t.gaps(), 1u);
  EXPECT_EQ(t.streams(), 1u);
  EXPECT_EQ(t.duplicates(), 0u);
}

// A close, or a stream header whose sequence is behind, ends the numbering: a sender restarted with the same
// stream id (it sends its header first) or a recording replayed twice is received whole, not as duplicates.
TEST(SequenceTracker, CloseOrAHeaderBehindStartsTheNumberingAfresh) {
  SequenceTracker t;
  using V = SequenceTracker::Verdict;
  for (std::uint64_t s = 1; s <= 2000; ++s) t.see(7, s);
  t.close(7);
  EXPECT_EQ(t.see(7, 1), V::NewStream);  // the same recording again
  for (std::uint64_t s = 2; s <= 2000; ++s) EXPECT_EQ(t.see(7, s), V::InOrder) << s;
  t.header(7, 2000);  // the periodic header of the running sender: nothing changes
  EXPECT_EQ(t.see(7, 2001), V::InOrder);
  t.header(7, 0);  // restarted (killed, no close): its header comes first with sequence 0
  EXPECT_EQ(t.see(7, 1), V::NewStream);
  for (std::uint64_t s = 2; s <= 100; ++s) EXPECT_EQ(t.see(7, s), V::InOrder) << s;
  EXPECT_EQ(t.duplicates(), 0u);
  EXPECT_EQ(t.missing(), 0u);
  EXPECT_EQ(t.streams(), 3u);
}

// Three forged numbers 10^6 ahead (enough to confirm a jump) cost the honest stream nothing: its next
// messages are far behind the forged numbering, taken as jumps, and after three of them the numbering is
// the honest one again; the forged ones are counted as jumps and what they made "missing" is undone (they
// used to make 200 of the next 400 honest spokes duplicates).
TEST(SequenceTracker, ForgedNumbersAheadCannotPoisonTheHonestStream) {
  SequenceTracker t;
  using V = SequenceTracker::Verdict;
  for (std::uint64_t s = 1; s <= 100; ++s) t.see(3, s);
  for (std::uint64_t f = 0; f < 3; ++f) t.see(3, 1000000 + f);
  std::uint64_t dropped = 0;
  for (std::uint64_t s = 101; s <= 500; ++s) dropped += t.see(3, s) == V::Duplicate;
  EXPECT_EQ(dropped, 0u);
  EXPECT_EQ(t.resyncs(), 1u);
  EXPECT_EQ(t.missing(), 0u);
  EXPECT_EQ(t.jumps(), 3u);  // the forged three
  EXPECT_EQ(t.see(3, 501), V::InOrder);
  EXPECT_EQ(t.see(3, 400), V::Duplicate);  // the honest numbering's own duplicates still are
}
