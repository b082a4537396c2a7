// Replaying a recording: streams a recording back through the wire protocol, paced by its timestamps.
// A radstream recording (its acquisitions carry the envelope: stream id, sequence, timestamps) is sent as the
// same bytes it was received as; --loop and --restamp give fresh sequence numbers and timestamps instead.
// Files from other tools are paced by acquisition_time_stamp (x --tick-us) or by --rate.
#include "wire/replay.hpp"

#include <ismrmrd/ismrmrd.h>

#include <cmath>
#include <cstring>
#include <ctime>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_check.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_raw.hpp"
#include "io/mrd_reader.hpp"

namespace radstream {

double replay_speed(const ReplayControl& a) {
  if (a.speed == "max") return 0;
  double speed = 0;
  try {
    speed = std::stod(a.speed);
  } catch (const std::exception&) {
    throw ConfigError("--speed '" + a.speed + "' is not a number or max");
  }
  if (!(speed > 0)) throw ConfigError("--speed " + a.speed + " must be > 0 (or max)");
  return speed;
}

std::size_t replay_end(const ReplayControl& a, std::size_t spokes) {
  if (a.start < 0 || std::size_t(a.start) > spokes)
    throw ConfigError(
        fmt::format("--start {} is outside 0..{} ({} has {} spokes)", a.start, spokes, a.file, spokes));
  const std::size_t end = a.count < 0 ? spokes : std::min(spokes, std::size_t(a.start + a.count));
  if (end <= std::size_t(a.start)) throw ConfigError(a.file + ": no spokes to replay in the range asked for");
  return end;
}

int replay_recording(const ReplayControl& a, const SenderParams& sender_params,
                     const std::function<bool()>& stop) {
  check_mrd_in_child(a.file, a.start, a.count);  // a file that crashes HDF5 is refused, not a crash here
  MrdReader reader(a.file);
  const StreamHeader header = stream_header_from_xml(reader.xml(), a.file);
  const double asked = replay_speed(a);
  const bool max_speed = asked == 0;
  const double speed = max_speed ? 1.0 : asked;  // (max: no waiting; the factor only scales the stamps)
  const std::size_t end = replay_end(a, reader.count());
  // A radstream recording carries the envelope in user_int[0..7] of every acquisition.
  const RawSpoke first = reader.read(std::size_t(a.start));
  ISMRMRD::ISMRMRD_AcquisitionHeader h0;
  std::memcpy(&h0, first.acq_header.data(), sizeof h0);
  const bool ours = h0.user_int[6] != 0;
  const bool verbatim = ours && !a.loop && !a.restamp;
  zmq::context_t ctx(1);
  Sender sender(ctx, sender_params, verbatim ? std::uint32_t(h0.user_int[6]) : new_stream_id());
  sender.set_stop(stop);
  sender.set_stall_limit(a.no_wait ? 0.0 : a.wait_s, sender_params.endpoint);
  try {
    wait_for_receiver(sender, sender_params.endpoint, a.no_wait ? 0.0 : a.wait_s);
    log::info("replay: {} spokes of {} ({} samples x {} coils) to {}, {}{}", end - a.start, a.file,
              header.samples, header.coils, sender_params.endpoint,
              max_speed ? "as fast as possible" : fmt::format("speed {}", speed),
              verbatim ? ", verbatim" : (ours ? ", restamped" : ", a foreign file: new envelopes"));
    sender.send_header(reader.xml(), verbatim ? wire::kFlagRecordedClock : 0u);
    std::uint64_t seq = 0;
    std::int64_t t0 = monotonic_ns(), rec0 = 0, prev_rec = 0, skipped_ns = 0;
    const std::int64_t max_gap_ns = std::int64_t(a.max_gap_s * 1e9);
    long jumps = 0, backs = 0;
    std::size_t sent = 0;
    bool first_pass = true;
    do {
      for (std::size_t i = std::size_t(a.start); i < end; ++i) {
        if (stop()) {
          log::info("replay: interrupted after {} spokes", sent);
          sender.set_linger_ms(
              200);  // a receiver still gets the close message; nobody listening: no 2 s wait
          sender.close();
          return 130;
        }
        const RawSpoke r = reader.read(i);
        ISMRMRD::ISMRMRD_AcquisitionHeader h;
        std::memcpy(&h, r.acq_header.data(), sizeof h);
        // Pacing: recorded acquisition ns, else the MRD time stamp in ticks, else --rate.
        std::int64_t rec = 0;
        if (ours)
          rec = join64(h.user_int[0], h.user_int[1]);
        else if (a.rate > 0)
          rec = std::int64_t(double(i - a.start) * 1e9 / a.rate);
        else
          rec = std::int64_t(double(h.acquisition_time_stamp) * a.tick_us * 1e3);
        if (i == std::size_t(a.start)) {
          if (first_pass) rec0 = rec;
          prev_rec = rec;  // each pass starts at its first spoke's time
        }
        // A jump of the timestamps (hours, a clock reset, a garbled stamp) is shortened to --max-gap-s; one
        // going back is not waited for. Each kind is said once, with the spoke where it happened.
        const std::int64_t gap = rec - prev_rec;
        if (gap > max_gap_ns) {
          skipped_ns += gap - max_gap_ns;
          if (!jumps++)
            log::warn(
                "replay: the timestamps jump by {:.1f} s before spoke {}; waits are capped at {} s "
                "(--max-gap-s)",
                double(gap) * 1e-9, i, a.max_gap_s);
        } else if (gap < 0) {
          skipped_ns += gap;
          if (!backs++)
            log::warn("replay: the timestamps go back by {:.3f} s before spoke {}; sent without waiting",
                      double(-gap) * 1e-9, i);
        }
        prev_rec = rec;
        const std::int64_t due = t0 + std::int64_t(double(rec - rec0 - skipped_ns) / speed);
        if (!max_speed) {
          // In slices of at most 50 ms, so that Ctrl-C and SIGTERM stop a long wait at once.
          while (monotonic_ns() < due && !stop()) sleep_until_ns(std::min(due, monotonic_ns() + 50'000'000));
          if (stop()) continue;  // the check at the top of the loop closes and returns
        }
        wire::Envelope e;
        e.type = std::uint16_t(wire::MsgType::Spoke);
        if (verbatim) {
          e.sequence = std::uint32_t(h.user_int[7]);
          e.stream_id = std::uint32_t(h.user_int[6]);
          e.spoke_index = std::uint64_t(join64(h.user_int[4], h.user_int[5]));
          e.acquired_ns = join64(h.user_int[0], h.user_int[1]);
          e.sent_ns = join64(h.user_int[2], h.user_int[3]);
          e.angle = double(h.user_float[0]);
        } else {
          e.sequence = ++seq;
          e.stream_id = sender.stream_id();
          e.spoke_index =
              ours ? std::uint64_t(join64(h.user_int[4], h.user_int[5])) : h.idx.kspace_encode_step_1;
          e.acquired_ns = max_speed ? monotonic_ns() : due;
          e.sent_ns = monotonic_ns();
          e.angle = ours ? double(h.user_float[0]) : std::nan("");
        }
        sender.send_spoke_frames(e, r.acq_header, std::as_bytes(std::span(r.traj)),
                                 std::as_bytes(std::span(r.data)));
        ++sent;
      }
      first_pass = false;
      if (a.loop) {
        t0 = monotonic_ns();
        skipped_ns = 0;
        sender.send_header(reader.xml(), verbatim ? wire::kFlagRecordedClock : 0u);
      }
    } while (a.loop);
    sender.close();
    log::info("replay: sent {} spokes in {:.2f} s ({})", sent, double(monotonic_ns() - t0) * 1e-9,
              delivery_note(sender_params.socket));
  } catch (const SendInterrupted&) {
    log::info("replay: interrupted while waiting for a receiver");
    return 130;
  }
  return 0;
}

}  // namespace radstream
