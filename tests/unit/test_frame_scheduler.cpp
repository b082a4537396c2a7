// The frame scheduler on synthetic spoke counts: window/stride, skip-when-behind and in-order policies,
// window changes mid-stream, and the drain at a stream's close.
#include <gtest/gtest.h>

#include <vector>

#include "stream/frame_scheduler.hpp"

using namespace radstream;

namespace {

// Feeds spoke counts one by one (as they arrive) and makes every due frame at once (a fast reconstruction).
std::vector<std::uint64_t> frames_when_fast(FrameScheduler& s, std::uint64_t total) {
  std::vector<std::uint64_t> ends;
  for (std::uint64_t count = 1; count <= total; ++count)
    while (auto d = s.next(count)) {
      EXPECT_EQ(d->skipped, 0u);
      ends.push_back(d->end);
      s.advance();
    }
  return ends;
}

}  // namespace

TEST(FrameScheduler, FirstFrameAtTheWindowThenEveryStride) {
  FrameScheduler s;
  s.reset(64, 16, true);
  const auto ends = frames_when_fast(s, 400);
  ASSERT_EQ(ends.size(), 22u);  // (400 - 64) / 16 + 1
  EXPECT_EQ(ends.front(), 64u);
  EXPECT_EQ(ends[1], 80u);
  EXPECT_EQ(ends.back(), 400u);
  EXPECT_TRUE(s.drained(400));
  EXPECT_FALSE(s.drained(416));
}

TEST(FrameScheduler, SkipWhenBehindMakesTheNewestDueFrame) {
  FrameScheduler s;
  s.reset(64, 16, true);
  // The reconstruction looks only when 300 spokes are in: frames ending 64..288 are due; the newest wins.
  auto d = s.next(300);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->end, 288u);
  EXPECT_EQ(d->skipped, 14u);  // 64, 80, ..., 272
  s.advance();
  EXPECT_FALSE(s.next(303));
  d = s.next(304);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->end, 304u);
  EXPECT_EQ(d->skipped, 0u);
}

TEST(FrameScheduler, InOrderMakesEveryFrameAndDrainsAtClose) {
  FrameScheduler s;
  s.reset(64, 16, false);
  // A slow reconstruction: the whole stream (400 spokes, then the close) is in before the first frame.
  std::vector<std::uint64_t> ends;
  while (auto d = s.next(400)) {
    EXPECT_EQ(d->skipped, 0u);
    ends.push_back(d->end);
    EXPECT_FALSE(s.drained(400));
    s.advance();
  }
  ASSERT_EQ(ends.size(), 22u);
  for (std::size_t i = 0; i < ends.size(); ++i) EXPECT_EQ(ends[i], 64u + 16u * i);
  EXPECT_TRUE(s.drained(400));  // every frame due at the close is made: the run may stop
}

TEST(FrameScheduler, WindowChangesMidStream) {
  FrameScheduler s;
  s.reset(32, 8, true);
  ASSERT_TRUE(s.next(32));
  s.advance();        // next ends at 40
  s.set_window(128);  // a larger window waits for its spokes
  EXPECT_FALSE(s.next(100));
  auto d = s.next(128);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->end, 128u);
  s.advance();
  s.set_window(16);  // a smaller one continues from where the next frame was due
  d = s.next(136);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->end, 136u);
  s.set_stride(0);  // clamped to 1
  EXPECT_EQ(s.stride(), 1);
}

TEST(FrameScheduler, StrideLargerThanWindowAndWindowOfOne) {
  FrameScheduler s;
  s.reset(10, 25, true);
  const auto ends = frames_when_fast(s, 100);
  EXPECT_EQ(ends, (std::vector<std::uint64_t>{10, 35, 60, 85}));
  s.reset(1, 1, false);
  EXPECT_EQ(frames_when_fast(s, 5).size(), 5u);
}
