#include "stream/sequence_tracker.hpp"

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
  // A jump beyond the window: believed only when kConfirm consecutive numbers follow it; until then the
  // messages are taken (their data passed every check) without moving the numbering.
  if (seq > last_ && seq - last_ > kWindow) {
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
    const std::uint64_t first = pending_first_;  // confirmed: the sender's numbering moved on
    // The same stream went on past a hole wider than the window (a SUB tap that lost thousands of spokes):
    // every number skipped is a message that never came, whatever the window can still tell apart.
    missing_ += first - last_ - 1;
    ++gaps_;
    restart(stream_id, seq, false);  // the same stream, renumbered
    for (std::uint64_t s = first; s <= seq; ++s) mark(s);
    if (jumps_ >= kConfirm - 1) jumps_ -= kConfirm - 1;  // they were real
    return Verdict::NewStream;
  }
  pending_ = false;

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
