// The MRD decode case (issue 28): acquisitions of the case's coils x samples encoded once into memory, then
// decoded by the MRD codec (io/mrd_protocol.hpp) on one core, as an MRD session's reader thread does.
#include <fmt/format.h>
#include <ismrmrd/ismrmrd.h>

#include <chrono>
#include <cstring>

#include "bench/bench_case.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "ingest/protocols.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_protocol.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/tcp_socket.hpp"

#include <atomic>
#include <thread>
#include <zmq.hpp>

namespace radstream::app {

nlohmann::ordered_json mrd_decode_case(const BenchCase& c) {
  const int S = c.samples, C = c.coils, K = 256;  // 256 distinct acquisitions, decoded over and over
  ISMRMRD::ISMRMRD_AcquisitionHeader h;
  ISMRMRD::ismrmrd_init_acquisition_header(&h);
  h.number_of_samples = std::uint16_t(S);
  h.active_channels = std::uint16_t(C);
  h.available_channels = std::uint16_t(C);
  h.trajectory_dimensions = 2;
  std::vector<float> traj(std::size_t(S) * 2);
  std::vector<cfloat> data(std::size_t(S) * C);
  std::vector<std::byte> stream;
  for (int k = 0; k < K; ++k) {
    h.scan_counter = std::uint32_t(k);
    for (std::size_t i = 0; i < traj.size(); ++i) traj[i] = float(i % 97) * 1e-3f;
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = cfloat(float(i % 13), float(k));
    mrd::append_acquisition(stream, std::as_bytes(std::span(&h, 1)), traj, data);
  }
  const long total = c.total_spokes;
  mrd::Limits lim;
  std::size_t decoded = 0;
  double checksum = 0;
  const std::int64_t t0 = monotonic_ns();
  while (long(decoded) < total) {
    mrd::MemorySource src(stream);
    while (auto m = mrd::read_message(src, lim)) {
      checksum += double(m->acq.data.back().real());  // the decoded values are used
      if (long(++decoded) >= total) break;
    }
  }
  const double secs = double(monotonic_ns() - t0) * 1e-9;
  const double bytes = double(stream.size()) / K;
  const double rate = double(decoded) / secs;
  log::info(
      "bench {}: {} acquisitions of {} coils x {} decoded in {:.3f} s: {:.0f}/s, {:.2f} GB/s (checksum {:g})",
      c.name, decoded, C, S, secs, rate, rate * bytes * 1e-9, checksum);
  return {{"case", c.name},
          {"what", c.what},
          {"kind", "mrd-decode"},
          {"backend", "cpu"},
          {"acquisitions", decoded},
          {"seconds", secs},
          {"acquisitions_per_s", rate},
          {"gb_per_s", rate * bytes * 1e-9},
          {"coils", C},
          {"samples", S}};
}

namespace {

// The ZeroMQ path of the case, the pass MRD2 compares with: the simulator's spokes over ZeroMQ into the
// pipeline, every image published (sinks.publish) to a subscriber that takes it; the last spoke's arrival ->
// image handed to the publisher's socket per frame.
nlohmann::ordered_json zmq_pass(const BenchCase& c, const Registry& registry) {
  RunConfig cfg = live_run_config(c);
  cfg.sinks.publish = "tcp://127.0.0.1:" + std::to_string(c.port + 1);
  StreamRuntime p(cfg, registry, make_protocol_servers);
  zmq::context_t ctx(1);
  zmq::socket_t sub(ctx, zmq::socket_type::sub);
  sub.set(zmq::sockopt::subscribe, "");
  sub.set(zmq::sockopt::rcvtimeo, 100);
  sub.set(zmq::sockopt::linger, 0);
  sub.connect(cfg.sinks.publish);
  std::atomic<long> images{0};
  std::atomic<bool> stop{false};
  p.start();
  std::thread reader([&] {
    try {
      zmq::message_t m;
      while (!stop) {
        if (!sub.recv(m, zmq::recv_flags::none)) continue;
        if (!m.more()) ++images;  // the pixels, the second part of an image
      }
    } catch (const std::exception& e) {
      log::warn("bench {}: the ZeroMQ image subscriber: {}", c.name, e.what());
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the subscription reaches the publisher
  const int pool = std::max(512, c.spokes + 2 * c.stride);
  const long total = long(c.rate_hz * c.duration_s);
  const auto sim = bench_streamer(c, pool, total, false);
  sim->run();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  p.stop();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  stop = true;
  reader.join();
  Metrics& m = p.metrics();
  const auto arr = m.arrival.summary(), pub = m.published_latency.summary(),
             own = m.published_after_ready.summary();
  log::info(
      "bench {} (ZeroMQ pass): {} spokes, {} frames ({} skipped), {} images taken by the subscriber; last "
      "spoke arrived -> image ready p99 {:.3f} ms, -> image published p99 {:.3f} ms",
      c.name, m.spokes.load(), m.frames.load(), m.frames_skipped.load(), images.load(), arr.p99, pub.p99);
  return {{"spokes_sent", total},
          {"spokes_received", m.spokes.load()},
          {"frames", m.frames.load()},
          {"frames_skipped", m.frames_skipped.load()},
          {"images_published", m.published.load()},
          {"images_taken", images.load()},
          {"latency_arrival_to_ready_ms", to_json(arr)},
          {"latency_arrival_to_sent_ms", to_json(pub)},
          {"latency_ready_to_sent_ms", to_json(own)},
          {"sender_max_late_ms", double(sim->max_late_ns()) * 1e-6}};
}

// The MRD path: one MRD client streams the same spokes over TCP to --mrd-listen and takes every image back.
nlohmann::ordered_json mrd_pass(const BenchCase& c, const Registry& registry) {
  RunConfig cfg = live_run_config(c);
  cfg.mrd.listen = "tcp://127.0.0.1:*";
  StreamRuntime p(cfg, registry, make_protocol_servers);
  p.start();
  const Simulator sim(bench_sim_params(c));
  const int pool = std::max(512, c.spokes + 2 * c.stride);
  const auto spokes = sim.spokes(0, pool);
  const long total = long(c.rate_hz * c.duration_s);
  // The scanner: one MRD client, the XML header, then the acquisitions paced at rate_hz, then the close; a
  // reader thread takes the images back.
  Fd fd = tcp_connect(p.endpoint_of("mrd"), 5.0);
  std::atomic<long> images{0};
  std::atomic<bool> closed{false}, stop{false};
  std::thread reader([&] {
    try {
      SocketSource src(fd.get(), 30.0, 0.0, &stop);
      mrd::Limits lim;
      while (auto m = mrd::read_message(src, lim)) {
        if (m->id == mrd::kImage) ++images;
        if (m->id == mrd::kClose) {
          closed = true;
          return;
        }
      }
    } catch (const std::exception& e) {
      if (!stop) log::warn("bench {}: the MRD reader: {}", c.name, e.what());
    }
  });
  std::vector<std::byte> b;
  mrd::append_text(b, mrd::kHeader, stream_header_to_xml(sim.header()));
  send_all(fd.get(), b, 5.0);
  const std::int64_t t0 = monotonic_ns();
  std::int64_t late = 0;
  for (long n = 0; n < total; ++n) {
    const std::int64_t due = t0 + std::int64_t(double(n) * 1e9 / c.rate_hz);
    sleep_until_ns(due);
    late = std::max(late, monotonic_ns() - due);
    Spoke s = spokes[std::size_t(n % pool)];
    s.header.spoke_index = std::uint64_t(n);
    const auto head = acquisition_header_bytes(s.header, s.samples, s.coils, 2);
    b.clear();
    mrd::append_acquisition(b, head, s.traj, s.data);
    if (!send_all(fd.get(), b, 5.0)) break;
  }
  b.clear();
  mrd::append_close(b);
  send_all(fd.get(), b, 5.0);
  const std::int64_t deadline = monotonic_ns() + 30'000'000'000;
  while (!closed && monotonic_ns() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  stop = true;
  reader.join();
  p.stop();
  Metrics& m = p.metrics();
  const auto arr = m.arrival.summary(), sent = m.mrd.arrival_to_sent.summary(),
             own = m.mrd.ready_to_sent.summary();
  log::info(
      "bench {} (MRD pass): {} acquisitions at {} /s over MRD, {} frames ({} skipped), {} images back; last "
      "spoke arrived -> image ready p99 {:.3f} ms, -> image sent p99 {:.3f} ms; ready -> sent p99 {:.3f} ms",
      c.name, m.mrd.acquisitions.load(), c.rate_hz, m.frames.load(), m.frames_skipped.load(), images.load(),
      arr.p99, sent.p99, own.p99);
  return {{"acquisitions_sent", total},
          {"acquisitions_received", m.mrd.acquisitions.load()},
          {"frames", m.frames.load()},
          {"frames_skipped", m.frames_skipped.load()},
          {"images_back", images.load()},
          {"latency_arrival_to_ready_ms", to_json(arr)},
          {"latency_arrival_to_sent_ms", to_json(sent)},
          {"latency_ready_to_sent_ms", to_json(own)},
          {"sender_max_late_ms", double(late) * 1e-6},
          {"metrics", m.to_json(p.elapsed_s())}};
}

}  // namespace

nlohmann::ordered_json mrd_live_case(const BenchCase& c, const Registry& registry) {
  // Both paths in the same run, one after the other on the same GPU: ZeroMQ first, then MRD.
  const auto zpass = zmq_pass(c, registry);
  const auto mpass = mrd_pass(c, registry);
  const double z99 = zpass["latency_arrival_to_sent_ms"]["p99"].get<double>(),
               m99 = mpass["latency_arrival_to_sent_ms"]["p99"].get<double>();
  log::info(
      "bench {}: last spoke arrived -> image sent p99: MRD {:.3f} ms, ZeroMQ {:.3f} ms, difference {:.3f} ms",
      c.name, m99, z99, m99 - z99);
  return {{"case", c.name},
          {"what", c.what},
          {"kind", "mrd-live"},
          {"backend", to_string(c.backend)},
          {"rate_hz", c.rate_hz},
          {"window", c.spokes},
          {"stride", c.stride},
          {"acquisitions_sent", mpass["acquisitions_sent"]},
          {"acquisitions_received", mpass["acquisitions_received"]},
          {"frames", mpass["frames"]},
          {"frames_skipped", mpass["frames_skipped"]},
          {"images_back", mpass["images_back"]},
          {"latency_arrival_to_ready_ms", mpass["latency_arrival_to_ready_ms"]},
          {"latency_arrival_to_sent_ms", mpass["latency_arrival_to_sent_ms"]},
          {"latency_ready_to_sent_ms", mpass["latency_ready_to_sent_ms"]},
          {"zmq_latency_arrival_to_sent_ms", zpass["latency_arrival_to_sent_ms"]},
          {"mrd_minus_zmq_sent_p99_ms", m99 - z99},
          {"zmq_latency_ready_to_sent_ms", zpass["latency_ready_to_sent_ms"]},
          {"mrd_minus_zmq_ready_to_sent_p99_ms", mpass["latency_ready_to_sent_ms"]["p99"].get<double>() -
                                                     zpass["latency_ready_to_sent_ms"]["p99"].get<double>()},
          {"mrd_send_overhead_p99_ms", mpass["latency_ready_to_sent_ms"]["p99"]},
          {"sender_max_late_ms", mpass["sender_max_late_ms"]},
          {"zmq_pass", zpass},
          {"mrd_pass", mpass}};
}

}  // namespace radstream::app
