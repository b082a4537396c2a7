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
  std::string mrd;         // tcp://HOST:PORT of an MRD server: send there (MRD over TCP) instead of ZeroMQ;
                           // "-": to standard output
  std::string config;      // the MRD config name sent first (the server's reconstruction)
  std::string images_out;  // MRD: the images sent back, into this .h5 (or .mrd2)
  double mrd_timeout_s = 60;  // MRD: the longest wait for the server's close after ours

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
    v.field("mrd", mrd,
            "send to this MRD (ISMRMRD) server instead, over TCP: tcp://HOST:PORT (Gadgetron, a FIRE server, "
            "radstream run --mrd-listen); '-': the MRD stream to standard output (| radstream run "
            "--mrd-stdin)");
    v.field("config", config, "MRD: the config name sent first (e.g. gridding, nlinv, or the server's own)");
    v.field("images_out", images_out,
            "MRD: store the images the server sends back in this file: .h5 (HDF5) or .mrd2 (MRD 2)");
    v.field("mrd_timeout_s", mrd_timeout_s, 0.1, 86400.0,
            "MRD: the longest wait for the server's images and close after the last spoke");
  }
};

// --speed as a factor (0: max), and the end of the --start/--count range in a file of `spokes`: ConfigError
// naming the option otherwise.
double replay_speed(const ReplayControl& control);
std::size_t replay_end(const ReplayControl& control, std::size_t spokes);

// Sends the recording's header and spokes (looping with --loop) until done or `stop` says so. Returns the
// exit status: 0 sent, 130 interrupted. Throws ConfigError naming a bad option, IoError/InputError for the
// file.
int replay_recording(const ReplayControl& control, const SenderParams& sender,
                     const std::function<bool()>& stop);

// The same recording to an MRD server over TCP (control.mrd): config name, XML header, acquisitions paced as
// above, close; the images that come back are counted and stored (control.images_out). Returns 0 when the
// server closed cleanly, 3 when it sent an error or went away, 130 when interrupted. control.mrd "-": the
// same messages to standard output (a pipe; nothing read back).
int replay_to_mrd_server(const ReplayControl& control, const std::function<bool()>& stop);

}  // namespace radstream
