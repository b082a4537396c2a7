// Sequence numbers of one sender's stream: gaps (messages that never came), duplicates and late (reordered)
// messages. A new stream id starts a new sequence (a restarted sender); so do a close, and a stream header
// whose sequence is behind the highest seen, so that a sender restarted with the same id, or a recording
// replayed twice, is received whole. A forward jump beyond the window (a corrupted number, or a sender that
// really jumped) is not believed at once: the message is a Jump (its data are fine; the numbering stays), and
// only kConfirm consecutive numbers after it make the jump the new numbering, and the numbers it skipped
// count as missing (a tap that lost more than the window used to report 0 missing). One bad number loses
// nothing. A jump behind the window is treated the same way, so that after forged numbers far ahead were
// confirmed, the honest numbering resynchronises after kConfirm of its messages (counted in resyncs, the
// forged ones as jumps, their "missing" undone) instead of every honest spoke being a duplicate.
#pragma once
#include <bitset>
#include <cstdint>

namespace radstream {

class SequenceTracker {
 public:
  enum class Verdict { First, InOrder, Gap, Duplicate, Late, NewStream, Jump };

  // Classifies message `seq` of stream `stream_id`. Gap: the messages between the last one and this one are
  // counted as missing (and un-counted if they turn up late).
  Verdict see(std::uint32_t stream_id, std::uint64_t seq);
  // A stream header from the sender: a sequence behind the highest seen means the sender restarted.
  void header(std::uint32_t stream_id, std::uint64_t seq);
  // The sender closed its stream: whatever comes next starts a new numbering.
  void close(std::uint32_t stream_id);

  std::uint64_t missing() const { return missing_; }  // messages not (yet) received
  std::uint64_t gaps() const { return gaps_; }        // gap events
  std::uint64_t duplicates() const { return duplicates_; }
  std::uint64_t late() const { return late_; }
  std::uint64_t streams() const { return streams_; }
  std::uint64_t jumps() const { return jumps_; }      // messages whose number jumped ahead unconfirmed
  std::uint64_t resyncs() const { return resyncs_; }  // confirmed jumps undone by the old numbering's return
  std::uint32_t stream_id() const { return stream_; }
  std::uint64_t last() const { return last_; }
  bool started() const { return started_; }

 private:
  static constexpr std::uint64_t kWindow = 4096;  // how far back late messages are recognised
  static constexpr std::uint64_t kConfirm = 3;    // consecutive numbers that make a jump the new numbering
  bool seen(std::uint64_t seq) const { return window_[seq % kWindow]; }
  void mark(std::uint64_t seq) { window_[seq % kWindow] = true; }

  bool started_ = false;
  std::uint32_t stream_ = 0;
  std::uint64_t last_ = 0;  // highest sequence seen
  void restart(std::uint32_t stream_id, std::uint64_t seq, bool new_stream = true);
  std::bitset<kWindow> window_;
  std::uint64_t missing_ = 0, gaps_ = 0, duplicates_ = 0, late_ = 0, streams_ = 0, jumps_ = 0;
  // An unconfirmed jump: its first and last numbers and how many consecutive ones came.
  bool pending_ = false;
  std::uint64_t pending_first_ = 0, pending_last_ = 0, pending_count_ = 0;
  // The last confirmed jump ahead: the numbering before it, the messages it made missing, and the messages
  // numbered after it, so that the old numbering's return can undo it.
  bool jumped_ = false;
  std::uint64_t before_jump_ = 0, jump_missing_ = 0, since_jump_ = 0, resyncs_ = 0;
};

}  // namespace radstream
