// replay FILE --mrd tcp://HOST:PORT: a recording to any MRD server (or --mrd -: to standard output)
// (wire/replay.hpp), on the codec the server side uses (io/mrd_protocol.hpp). A reader thread takes what the
// server sends meanwhile (images, texts, the close), so that a server that answers while data still flows
// never blocks on a full socket.
#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_check.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_image_file.hpp"
#include "io/mrd_protocol.hpp"
#include "io/mrd_raw.hpp"
#include "io/mrd_reader.hpp"
#include "wire/replay.hpp"
#include "wire/tcp_socket.hpp"

namespace radstream {

namespace {

// What the server sent back.
struct ServerReplies {
  std::atomic<bool> closed{false}, failed{false}, errored{false};
  std::atomic<std::uint64_t> images{0}, texts{0};
  // The frames the server said were due (radstream's summary text: "..., N frames due, ..."); -1: not said.
  std::atomic<long long> frames_due{-1};
  std::string failure;  // under m
  std::mutex m;
};

void read_replies(int fd, ServerReplies& r, MrdImageWriter* out, const std::atomic<bool>& stop) {
  try {
    SocketSource src(fd, 30.0, 0.0, &stop);
    mrd::Limits lim;
    lim.keep_images = true;
    for (;;) {
      auto msg = mrd::read_message(src, lim);
      if (!msg) {
        if (!r.closed) {
          std::lock_guard l(r.m);
          r.failure = "the server closed the connection without an MRD close";
          r.failed = true;
        }
        return;
      }
      if (msg->id == mrd::kImage) {
        ++r.images;
        if (out) out->append(msg->image.head, msg->image.attributes, msg->image.pixels);
      } else if (msg->id == mrd::kText) {
        ++r.texts;
        if (const long long due = mrd::frames_due_in_summary(msg->text); due >= 0) r.frames_due = due;
        if (msg->text.rfind("ERR", 0) == 0) {
          r.errored = true;
          log::error("replay: the MRD server says: {}", msg->text);
        } else if (msg->text.rfind("WRN", 0) == 0) {
          log::warn("replay: the MRD server says: {}", msg->text);
        } else {
          log::info("replay: the MRD server says: {}", msg->text);
        }
      } else if (msg->id == mrd::kClose) {
        r.closed = true;
        return;
      }
    }
  } catch (const std::exception& e) {
    if (stop) return;
    std::lock_guard l(r.m);
    r.failure = e.what();
    r.failed = true;
  }
}

// What a replay sends an MRD receiver, in order: the config name, the XML header, the acquisitions paced as
// replay paces ZeroMQ (radstream's ns stamps, --rate, or the MRD time stamps), the close. `send` throws
// IoError when the receiver stops taking data; `halt` ends the acquisitions early (the server ended the
// session). Returns the acquisitions sent, or -1 when `stop` interrupted it.
long send_session(const ReplayControl& a, MrdReader& reader, std::size_t end,
                  const std::function<void(const std::vector<std::byte>&)>& send,
                  const std::function<bool()>& halt, const std::function<bool()>& stop) {
  const double asked = replay_speed(a);
  const bool max_speed = asked == 0;
  const double speed = max_speed ? 1.0 : asked;  // (max: no waiting; the factor only scales the stamps)
  log::info("replay: {} acquisitions of {} to {}{}, {}", end - std::size_t(a.start), a.file,
            a.mrd == "-" ? std::string("standard output") : "the MRD server " + a.mrd,
            a.config.empty() ? "" : " (config " + a.config + ")",
            max_speed ? "as fast as possible" : fmt::format("speed {}", speed));
  const std::int64_t t_start = monotonic_ns();
  std::vector<std::byte> b;
  if (!a.config.empty()) mrd::append_config_name(b, a.config);
  mrd::append_text(b, mrd::kHeader, reader.xml());
  send(b);
  long sent = 0;
  std::int64_t rec0 = 0, prev = 0, skipped = 0;
  const std::int64_t max_gap_ns = std::int64_t(a.max_gap_s * 1e9);
  for (std::size_t i = std::size_t(a.start); i < end; ++i) {
    if (stop()) {
      log::info("replay: interrupted after {} acquisitions", sent);
      return -1;
    }
    if (halt()) break;
    const RawSpoke r = reader.read(i);
    ISMRMRD::ISMRMRD_AcquisitionHeader h;
    std::memcpy(&h, r.acq_header.data(), sizeof h);
    if (!max_speed) {
      std::int64_t rec = h.user_int[6] != 0 ? join64(h.user_int[0], h.user_int[1])
                         : a.rate > 0       ? std::int64_t(double(i - std::size_t(a.start)) * 1e9 / a.rate)
                                      : std::int64_t(double(h.acquisition_time_stamp) * a.tick_us * 1e3);
      if (i == std::size_t(a.start)) rec0 = prev = rec;
      const std::int64_t gap = rec - prev;
      if (gap > max_gap_ns) skipped += gap - max_gap_ns;
      if (gap < 0) skipped += gap;
      prev = rec;
      const std::int64_t due = t_start + std::int64_t(double(rec - rec0 - skipped) / speed);
      while (monotonic_ns() < due && !stop()) sleep_until_ns(std::min(due, monotonic_ns() + 50'000'000));
    }
    b.clear();
    mrd::append_acquisition(b, r.acq_header, r.traj, r.data);
    send(b);
    ++sent;
  }
  b.clear();
  mrd::append_close(b);
  send(b);
  return sent;
}

// replay FILE --mrd -: the session's messages to standard output (a pipe into `run --mrd-stdin`, or a
// stream file), nothing read back.
int replay_to_stdout(const ReplayControl& a, MrdReader& reader, std::size_t end,
                     const std::function<bool()>& stop) {
  if (::isatty(STDOUT_FILENO))
    throw ConfigError(
        "--mrd - writes binary MRD messages to standard output, which is a terminal here: "
        "pipe it into a reader (| radstream run --mrd-stdin) or redirect it (> scan.mrd)");
  const std::int64_t t0 = monotonic_ns();
  const long sent = send_session(
      a, reader, end,
      [](const std::vector<std::byte>& b) {
        // Blocking: a slow reader paces the replay; a reader that went away is EPIPE.
        if (!send_all(STDOUT_FILENO, b, 86400.0))
          throw IoError(fmt::format("replay: standard output stopped taking data: {}", std::strerror(errno)));
      },
      [] { return false; }, stop);
  if (sent < 0) return 130;
  log::info("replay: wrote {} acquisitions to standard output in {:.2f} s", sent,
            double(monotonic_ns() - t0) * 1e-9);
  return 0;
}

}  // namespace

int replay_to_mrd_server(const ReplayControl& a, const std::function<bool()>& stop) {
  if (a.mrd == "-" && !a.images_out.empty())
    throw ConfigError(
        "--images-out needs an MRD server to answer (--mrd tcp://HOST:PORT); with --mrd - "
        "the images come from the reading end of the pipe");
  check_mrd_in_child(a.file, a.start, a.count);
  MrdReader reader(a.file);
  stream_header_from_xml(reader.xml(), a.file);  // a file radstream cannot describe is refused before sending
  replay_speed(a);                               // a bad --speed is refused before anything is sent
  if (a.loop) throw ConfigError("--loop is not available with --mrd (one MRD session sends one scan)");
  const std::size_t end = replay_end(a, reader.count());
  if (a.mrd == "-") return replay_to_stdout(a, reader, end, stop);
  std::unique_ptr<MrdImageWriter> out;
  if (!a.images_out.empty()) out = std::make_unique<MrdImageWriter>(a.images_out, reader.xml());

  // A server still starting is waited for, up to --wait-s (as replay waits for a ZeroMQ receiver).
  Fd fd;
  const std::int64_t give_up = monotonic_ns() + std::int64_t((a.no_wait ? 0.0 : a.wait_s) * 1e9);
  for (;;) {
    try {
      fd = tcp_connect(a.mrd, 1.0);
      break;
    } catch (const IoError&) {
      if (monotonic_ns() >= give_up || stop()) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ServerReplies replies;
  std::atomic<bool> stop_reader{false};
  std::thread reader_thread([&] { read_replies(fd.get(), replies, out.get(), stop_reader); });
  auto finish = [&](int rc) {
    stop_reader = true;
    reader_thread.join();
    return rc;
  };
  auto send = [&](const std::vector<std::byte>& b) {
    if (!send_all(fd.get(), b, 30.0))
      throw IoError(fmt::format("the MRD server at {} stopped taking data", a.mrd));
  };
  long sent = 0;
  const std::int64_t t_start = monotonic_ns();
  try {
    sent = send_session(
        a, reader, end, send, [&] { return replies.errored || replies.failed || replies.closed; }, stop);
    if (sent < 0) return finish(130);
  } catch (const Error& e) {
    // A server that said why it ended the session has said enough (its ERR text is in the log).
    for (int i = 0; i < 200 && !replies.errored && !replies.closed && !replies.failed; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!replies.errored) log::error("replay: {}", e.what());
    ::shutdown(fd.get(), SHUT_RDWR);
    return finish(3);
  }
  // The frames still due come after our close, then the server's close.
  const std::int64_t deadline = monotonic_ns() + std::int64_t(a.mrd_timeout_s * 1e9);
  while (!replies.closed && !replies.failed && monotonic_ns() < deadline && !stop())
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const bool timed_out = !replies.closed && !replies.failed && !stop();
  ::shutdown(fd.get(), SHUT_RDWR);
  finish(0);
  log::info("replay: sent {} acquisitions in {:.2f} s; {} images back{}", sent,
            double(monotonic_ns() - t_start) * 1e-9, replies.images.load(),
            out ? fmt::format(" (stored in {})", a.images_out) : std::string());
  if (timed_out) {
    log::error("replay: the MRD server did not close within {} s of the last acquisition (--mrd-timeout-s)",
               a.mrd_timeout_s);
    return 3;
  }
  if (replies.failed) {
    log::error("replay: the MRD server connection failed: {}", replies.failure);
    return 3;
  }
  if (const long long due = replies.frames_due.load();
      due >= 0 && replies.images.load() < std::uint64_t(due)) {
    log::error("replay: {} images came back of the {} frames the server said were due", replies.images.load(),
               due);
    return 3;
  }
  return replies.errored ? 3 : 0;
}

}  // namespace radstream
