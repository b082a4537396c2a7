// Replaying a recording (radstream replay FILE.h5) through the wire protocol, paced by its timestamps.
#pragma once
#include <functional>
#include <string>

#include "wire/sender.hpp"

namespace radstream {

// What to replay and at which pace (the socket's settings are SenderParams').
struct ReplayControl {
  std::string file;
  std::string speed = "1";  // factor, or max
  bool loop = false, restamp = false;
  long start = 0, count = -1;
  double rate = 0;  // spokes/s for files without usable timestamps
  double wait_s = 10;
  bool no_wait = false;
  double tick_us = 2500;   // MRD acquisition_time_stamp tick: 2.5 ms (scanners' and radstream's convention)
  double max_gap_s = 2.0;  // longest wait between two spokes; a larger jump of the timestamps is shortened

  template <class V>
  void visit(V& v) {
    v.field("file", file, "MRD .h5 recording");
    v.field("wait", wait_s, 0.0, 1e6, "seconds to wait for a receiver before failing");
    v.field("no_wait", no_wait, "send even when no receiver is connected");
    v.field("speed", speed, "1.0 (recorded pace), N (N times faster) or max");
    v.field("loop", loop, "replay again and again (fresh sequence numbers and timestamps)");
    v.field("restamp", restamp, "fresh sequence numbers and timestamps (for live latency)");
    v.field("start", start, 0L, 1L << 40, "first spoke");
    v.field("count", count, -1L, 1L << 40, "number of spokes (-1: all)");
    v.field("rate", rate, 0.0, 1e9,
            "spokes per second for files without radstream timestamps (0: their timestamps)");
    v.field("max_gap", max_gap_s, 0.001, 86400.0,
            "longest wait between two spokes, s: a larger jump of the recording's timestamps is shortened to "
            "this "
            "(and said)");
    v.field("tick_us", tick_us, 1e-3, 1e9, "MRD acquisition_time_stamp tick in microseconds (2500: 2.5 ms)");
  }
};

// Sends the recording's header and spokes (looping with --loop) until done or `stop` says so. Returns the
// exit status: 0 sent, 130 interrupted. Throws ConfigError naming a bad option, IoError/InputError for the
// file.
int replay_recording(const ReplayControl& control, const SenderParams& sender,
                     const std::function<bool()>& stop);

}  // namespace radstream
