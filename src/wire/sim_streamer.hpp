// The simulator as a scanner: streams the analytic phantom over the wire protocol at a spoke rate, with
// real CLOCK_MONOTONIC acquisition and send times, the stream header at start and about once a second, a
// heartbeat, and a close at the end. Used by `radstream simulate --endpoint` and by the in-process demo.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "sim/simulator.hpp"
#include "wire/sender.hpp"

namespace radstream {

struct StreamerParams {
  SenderParams sender;
  long spokes = -1;       // -1: endless (until stop)
  double duration_s = 0;  // > 0: stop after this much wall time, whatever was sent (the rest is reported)
  int pool = 0;           // > 0: precompute this many spokes and send them cyclically
  double header_every_s = 1.0;
  std::uint32_t stream_id = 0;  // 0: random
  bool unpaced = false;         // as fast as the socket takes them (acquisition time = send time)
  // > 0: wait this long for a receiver first, then fail (IoError); the same limit for a receiver that stops
  // taking spokes mid-stream ("gone"). 0: do not wait, and wait for ever on a stalled receiver.
  double wait_for_peer_s = 0;
};

class SimStreamer {
 public:
  SimStreamer(const SimParams& sim, const StreamerParams& p);
  ~SimStreamer();  // stops

  // Runs on the calling thread until done, stop(), or `interrupted()` says so; returns spokes sent.
  std::uint64_t run(const std::function<bool()>& interrupted = {});
  void start();  // run() on a thread of its own
  // Where to send, when the parameters left it empty (before start): the demo computes its pool first, then
  // starts the receiver it feeds, whose port is known only then.
  void set_endpoint(const std::string& endpoint);
  void stop();
  std::uint64_t sent() const { return sent_; }
  // Whether the last run() sent all it was asked for (false: stopped, interrupted or cut by duration_s).
  bool complete() const { return complete_; }
  std::int64_t max_late_ns() const { return max_late_; }  // the latest a spoke went out after its due time

 private:
  Simulator sim_;
  StreamerParams p_;
  std::vector<Spoke> pool_;
  // Why the stream falls behind `rate`, and what helps: without a pool, making the spokes live (--pool);
  // with one, sending them (the receiver or the link is slower than the rate: a lower --rate).
  std::string behind_advice(double rate) const;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> sent_{0};
  std::atomic<std::int64_t> max_late_{0};
  std::atomic<bool> complete_{false};
  std::thread thread_;
};

}  // namespace radstream
