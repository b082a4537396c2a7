#include "stream/sequence_tracker.hpp"

#include <algorithm>

namespace radstream {

void SequenceTracker::restart(std::uint32_t stream_id, std::uint64_t seq, bool new_stream) {
  pending_ = false;
  started_ = true;
  stream_ = stream_id;
  last_ = seq;
  window_.reset();
  mark(seq);
  if (new_stream) ++streams_;
}

void SequenceTracker::header(std::uint32_t stream_id, std::uint64_t seq) {
  if (started_ && stream_id == stream_ && seq < last_) started_ = false;  // the sender started over
}

void SequenceTracker::close(std::uint32_t stream_id) {
  if (started_ && stream_id == stream_) started_ = false;
}

SequenceTracker::Verdict SequenceTracker::see(std::uint32_t stream_id, std::uint64_t seq) {
  if (!started_ || stream_id != stream_) {
    const bool again = started_ || streams_ > 0;
    restart(stream_id, seq);
    return again ? Verdict::NewStream : Verdict::First;
  }
  // A jump beyond the window, ahead or behind: believed only when kConfirm consecutive numbers follow it;
  // until then the messages are taken (their data passed every check) without moving the numbering. Behind
  // too: after a forged jump ahead was confirmed, the honest numbering is far behind, and it takes the
  // numbering back the same way (it used to make every honest spoke a duplicate).
  const bool ahead = seq > last_ && seq - last_ > kWindow, behind = seq < last_ && last_ - seq >= kWindow;
  if (ahead || behind) {
    if (pending_ && seq == pending_last_ + 1) {
      pending_last_ = seq;
      ++pending_count_;
    } else {
      pending_ = true;
      pending_first_ = pending_last_ = seq;
      pending_count_ = 1;
    }
    if (pending_count_ < kConfirm) {
      ++jumps_;
      return Verdict::Jump;
    }
    const std::uint64_t first = pending_first_;          // confirmed: the sender's numbering moved on
    if (jumps_ >= kConfirm - 1) jumps_ -= kConfirm - 1;  // they were real
    if (ahead) {
      // The same stream went on past a hole wider than the window (a SUB tap that lost thousands of spokes):
      // every number skipped is a message that never came, whatever the window can still tell apart. Kept
      // to be undone if the old numbering comes back.
      before_jump_ = last_;
      jump_missing_ = first - last_ - 1;
      since_jump_ = kConfirm;
      jumped_ = true;
      missing_ += jump_missing_;
      ++gaps_;
    } else if (jumped_ && first > before_jump_ && first - before_jump_ <= kWindow) {
      // The numbering before the last jump ahead came back: that jump was forged (or a burst of corrupted
      // numbers). What it made missing was not; what it numbered counts as jumps.
      missing_ -= std::min(missing_, jump_missing_);
      missing_ += first - before_jump_ - 1;
      jumps_ += since_jump_;
      ++resyncs_;
      jumped_ = false;
    }
    restart(stream_id, seq, false);  // the same stream, renumbered
    for (std::uint64_t s = first; s <= seq; ++s) mark(s);
    return Verdict::NewStream;
  }
  pending_ = false;
  if (jumped_) ++since_jump_;

  if (seq > last_) {
    const std::uint64_t skipped = seq - last_ - 1;
    // Slots between the old and the new last become "not seen" again as the window moves on.
    if (skipped >= kWindow) {
      window_.reset();
    } else {
      for (std::uint64_t s = last_ + 1; s < seq; ++s) window_[s % kWindow] = false;
    }
    last_ = seq;
    mark(seq);
    if (skipped == 0) return Verdict::InOrder;
    missing_ += skipped;
    ++gaps_;
    return Verdict::Gap;
  }
  if (last_ - seq >= kWindow || seen(seq)) {
    ++duplicates_;
    return Verdict::Duplicate;
  }
  mark(seq);
  ++late_;
  if (missing_ > 0) --missing_;
  return Verdict::Late;
}

}  // namespace radstream
