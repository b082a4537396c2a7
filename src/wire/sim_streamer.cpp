#include "wire/sim_streamer.hpp"

#include <algorithm>
#include <ctime>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_file.hpp"

namespace radstream {
namespace {}  // namespace

SimStreamer::SimStreamer(const SimParams& sim, const StreamerParams& p) : sim_(sim), p_(p) {
  if (p.pool < 0) throw ConfigError("pool " + std::to_string(p.pool) + " must be >= 0");
  if (p.header_every_s <= 0) throw ConfigError("header interval must be > 0 s");
  if (!p.sender.endpoint.empty()) p.sender.validate();  // empty: set_endpoint() before start
  if (p.pool > 0 && p.pool % (sim.slices * sim.partitions) != 0)
    throw ConfigError(fmt::format(
        "pool {} must be a multiple of the slices {} x partitions {} (each slice's and partition's spokes "
        "cycle together)",
        p.pool, sim.slices, sim.partitions));
  if (p.pool > 0) {
    log::info("simulate: precomputing {} spokes ({} samples x {} coils)", p.pool, sim_.samples(), sim.coils);
    const std::int64_t t0 = monotonic_ns();
    pool_ = sim_.spokes(0, p.pool);
    log::info("simulate: {} spokes precomputed in {:.1f} s", p.pool, double(monotonic_ns() - t0) * 1e-9);
  }
}

void SimStreamer::set_endpoint(const std::string& endpoint) {
  SenderParams s = p_.sender;
  s.endpoint = endpoint;
  s.validate();
  p_.sender = s;
}

SimStreamer::~SimStreamer() {
  stop();
}

void SimStreamer::start() {
  stop_ = false;
  thread_ = std::thread([this] {
    try {
      run();
    } catch (const std::exception& e) {
      log::error("simulate: {}", e.what());
    }
  });
}

void SimStreamer::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::string SimStreamer::behind_advice(double rate) const {
  if (pool_.empty())
    return fmt::format("this machine cannot make {} spokes/s live; --pool N precomputes them", rate);
  return fmt::format(
      "the {} precomputed spokes cannot be sent at {} spokes/s: the receiver or the link is slower; a lower "
      "--rate",
      pool_.size(), rate);
}

std::uint64_t SimStreamer::run(const std::function<bool()>& interrupted) {
  if (p_.sender.endpoint.empty()) throw ConfigError("simulate: no endpoint to send to (set_endpoint)");
  zmq::context_t ctx(1);
  Sender sender(ctx, p_.sender, p_.stream_id ? p_.stream_id : new_stream_id());
  sender.set_stop([&] { return stop_.load() || (interrupted && interrupted()); });
  sender.set_stall_limit(p_.wait_for_peer_s, p_.sender.endpoint);
  complete_ = false;
  try {
    wait_for_receiver(sender, p_.sender.endpoint, p_.wait_for_peer_s);
    const std::string xml = stream_header_to_xml(sim_.header());
    const double rate = sim_.params().rate_hz;
    log::info("simulate: streaming {} spokes/s to {} ({} {}), stream id {}, {}", rate, p_.sender.endpoint,
              kSendSockets.name(p_.sender.socket), p_.sender.bind ? "bind" : "connect", sender.stream_id(),
              p_.spokes >= 0      ? std::to_string(p_.spokes) + " spokes"
              : p_.duration_s > 0 ? fmt::format("for {} s", p_.duration_s)
                                  : std::string("until stopped"));
    const std::int64_t t0 = monotonic_ns();
    const double period = 1e9 / rate;
    const std::int64_t header_ns = std::int64_t(p_.header_every_s * 1e9);
    std::int64_t next_header = t0 + header_ns, next_report = t0 + 2000000000;
    const int batch = std::clamp(int(rate / 50), 1, 256);
    std::vector<Spoke> live;
    std::uint64_t live_first = 0;
    std::int64_t warned_at = 0;  // the last behind-schedule warning (repeated every 5 s while it grows)
    double warned_ms = 0;
    bool cut = false;  // stopped by duration_s
    sender.send_header(xml);
    std::uint64_t i = 0;
    for (; p_.spokes < 0 || std::int64_t(i) < p_.spokes; ++i) {
      if (stop_ || (interrupted && interrupted())) break;
      if (p_.duration_s > 0 && double(monotonic_ns() - t0) * 1e-9 >= p_.duration_s) {
        cut = true;
        break;
      }
      const std::int64_t due = t0 + std::int64_t(double(i) * period);
      if (pool_.empty() && i >= live_first + live.size()) {
        live = sim_.spokes(i, batch);
        live_first = i;
      }
      const Spoke& s = pool_.empty() ? live[i - live_first] : pool_[i % pool_.size()];
      SpokeHeader h = s.header;
      const SpokeHeader at = sim_.place(i);  // a pooled spoke is sent with this place's numbers
      h.spoke_index = at.spoke_index;
      h.slice = at.slice;
      h.partition = at.partition;
      const std::int64_t now = monotonic_ns();
      if (p_.unpaced) {
        h.acquired_ns = now;
      } else {
        if (now < due) sleep_until_ns(due);
        const std::int64_t late = monotonic_ns() - due;
        if (late > max_late_) max_late_ = late;
        const double behind_ms = double(now - due) * 1e-6;
        if (behind_ms > 500 && behind_ms > warned_ms && (!warned_at || now - warned_at >= 5'000'000'000)) {
          warned_at = now;
          warned_ms = behind_ms;
          log::warn("simulate: {:.0f} ms behind schedule: {}", behind_ms, behind_advice(rate));
        }
        h.acquired_ns = due;
      }
      sender.send_spoke(h, s);
      ++sent_;
      if (now >= next_header) {
        sender.send_header(xml);
        sender.heartbeat();
        next_header += header_ns;
      }
      if (now >= next_report) {
        log::debug("simulate: {} spokes sent ({:.0f}/s)", i + 1, double(i + 1) / (double(now - t0) * 1e-9));
        next_report += 2000000000;
      }
    }
    const bool stopped = stop_ || (interrupted && interrupted());
    if (stopped) sender.set_linger_ms(200);  // prompt on Ctrl-C
    sender.close();
    const double took = double(monotonic_ns() - t0) * 1e-9;
    log::info("simulate: sent {} spokes in {:.2f} s ({})", sender.spokes_sent(), took,
              delivery_note(p_.sender.socket));
    if (cut) {
      const auto due = std::uint64_t(p_.duration_s * rate);
      if (due > i)
        log::warn(
            "simulate: --duration-s {} s reached: {} of the {} spokes due at {} spokes/s were not sent ({})",
            p_.duration_s, due - i, due, rate, behind_advice(rate));
    }
    complete_ = !stopped && (cut || p_.spokes < 0 || std::int64_t(i) >= p_.spokes);
  } catch (const SendInterrupted&) {  // Ctrl-C, SIGTERM or stop() while no receiver took the spokes
    log::warn("simulate: stopped after {} spokes while waiting for a receiver to take them",
              sender.spokes_sent());
  }
  return sender.spokes_sent();
}

}  // namespace radstream
