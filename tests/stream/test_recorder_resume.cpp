// A recorder that cannot make its next file for a while (no descriptor left: the flood of finding 2 made it
// fail at its next file and never resume) tries again and loses nothing: the spokes that came meanwhile are
// held and written first.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "ingest/zmq/zmq_ingest.hpp"
#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "stream/recorder.hpp"
#include "stream/stream_test_util.hpp"
#include "test_util.hpp"
#include "wire/wire.hpp"

using namespace radstream;
using namespace radstream::wire;
using radstream::streamtest::spans;

namespace {

// The lowest descriptor number free now: with the soft limit set to it, no descriptor can be opened (a new
// one must be below the limit, and every one below it is taken), whatever holes the table has above it.
rlim_t lowest_free_descriptor() {
  const int d = ::dup(0);
  ::close(d);
  return rlim_t(d);
}

}  // namespace

TEST(Stream, ARecorderThatCannotMakeItsFileTriesAgainAndLosesNothing) {
  SimParams sp;
  sp.matrix = 16;
  sp.coils = 2;
  const Simulator sim(sp);
  const auto spokes = sim.spokes(0, 100);
  test::TempDir dir;
  const std::string file = dir / "rec.h5";
  Metrics metrics;
  zmq::context_t ctx(1);
  IngestParams ip;
  ip.endpoint = "inproc://record-resume";
  RecordOptions o;
  o.path = file;
  o.max_queue_bytes = 1 << 26;
  {
    Recorder rec(o, metrics);
    ZmqIngest in(ctx, ip, metrics, false, 64, &rec);
    auto send_spokes = [&](int from, int to) {
      for (int i = from; i < to; ++i) {
        Envelope e;
        e.type = std::uint16_t(MsgType::Spoke);
        e.sequence = std::uint64_t(i + 1);
        e.stream_id = 7;
        e.spoke_index = std::uint64_t(i);
        e.angle = spokes[std::size_t(i)].header.angle;
        in.handle(spans(encode_spoke(e, spokes[std::size_t(i)])));
      }
    };
    // No descriptor left to this process while the stream starts: its file cannot be made.
    rlimit before{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
    rlimit none = before;
    none.rlim_cur = lowest_free_descriptor();
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &none), 0);
    Envelope h;
    h.type = std::uint16_t(MsgType::Header);
    h.stream_id = 7;
    in.handle(spans(encode_text(h, stream_header_to_xml(sim.header()))));
    send_spokes(0, 50);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // several attempts fail
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
    EXPECT_EQ(rec.written(), 0u) << "the file could not have been made yet";
    send_spokes(50, 100);
    rec.stop();
    EXPECT_EQ(rec.written(), 100u);
    EXPECT_EQ(rec.failures(), 0u) << rec.status();
  }
  EXPECT_EQ(metrics.recorded.load(), 100u);
  EXPECT_EQ(metrics.record_failures.load(), 0u);
  const auto got = read_mrd(file);
  ASSERT_EQ(got.spokes.size(), 100u);
  for (std::size_t i = 0; i < got.spokes.size(); ++i) ASSERT_EQ(got.spokes[i].header.spoke_index, i);
}
