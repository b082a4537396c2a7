// S1/S2 (issue 52): several scanners on one server. Each client streams its own simulated data (its own seed)
// over MRD at rate_hz and takes every image back; the latency a scanner sees is its frame's last acquisition
// sent -> the image received (one host, one clock). First one client alone, then `sessions` at once (S2: the
// first one vanishes halfway); each session's percentiles against the alone run's.
#include <fmt/format.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "bench/bench_case.hpp"
#include "core/clock.hpp"
#include "core/log.hpp"
#include "ingest/protocols.hpp"
#include "io/mrd_file.hpp"
#include "io/mrd_protocol.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/tcp_socket.hpp"

namespace radstream::app {

namespace {

// The first seconds of a session hold its start (plans, graph capture, the first frame's coil compression)
// and, with every frame made, the backlog it leaves: the steady figures start after them.
constexpr double kWarmupS = 5.0;

struct ClientResult {
  long sent = 0, images = 0, frames_due = -1;
  std::vector<double> latency_ms;  // per image: its last spoke sent -> received
  std::vector<double> steady_ms;   // those whose last spoke was sent after the first kWarmupS seconds
  bool vanished = false;
};

// The number after <name>NAME</name><value> in an image's attributes (-1 when absent).
long long meta_number(const std::string& attrs, const std::string& name) {
  const std::string key = "<name>" + name + "</name><value>";
  const auto at = attrs.find(key);
  if (at == std::string::npos) return -1;
  try {
    return std::stoll(attrs.substr(at + key.size()));
  } catch (const std::exception&) {
    return -1;
  }
}

// One scanner: the header, `total` acquisitions paced at rate_hz (each one's send time kept), the close; a
// reader thread takes the images back. `vanish_at` >= 0: the connection is dropped after that many.
ClientResult scanner(const std::string& endpoint, const BenchCase& c, unsigned seed, long total,
                     long vanish_at) {
  SimParams sp = bench_sim_params(c);
  sp.seed = seed;
  const Simulator sim(sp);
  const int pool = std::max(512, c.spokes + 2 * c.stride);
  const auto spokes = sim.spokes(0, pool);
  ClientResult r;
  std::vector<std::int64_t> sent_ns(std::size_t(total), 0);
  std::mutex m;
  Fd fd = tcp_connect(endpoint, 5.0);
  std::atomic<bool> stop{false}, closed{false};
  std::thread reader([&] {
    try {
      SocketSource src(fd.get(), 60.0, 0.0, &stop);
      mrd::Limits lim;
      lim.keep_images = true;
      while (auto msg = mrd::read_message(src, lim)) {
        const std::int64_t now = monotonic_ns();
        if (msg->id == mrd::kImage) {
          const long long last = meta_number(msg->image.attributes, "LastSpoke");
          std::lock_guard l(m);
          ++r.images;
          if (last >= 0 && last < total && sent_ns[std::size_t(last)] > 0) {
            r.latency_ms.push_back(double(now - sent_ns[std::size_t(last)]) * 1e-6);
            if (double(last) >= kWarmupS * c.rate_hz) r.steady_ms.push_back(r.latency_ms.back());
          }
        } else if (msg->id == mrd::kText) {
          if (const long long due = mrd::frames_due_in_summary(msg->text); due >= 0) r.frames_due = long(due);
        } else if (msg->id == mrd::kClose) {
          closed = true;
          return;
        }
      }
    } catch (const std::exception& e) {
      if (!stop) log::warn("bench {}: a scanner's reader: {}", c.name, e.what());
    }
  });
  std::vector<std::byte> b;
  mrd::append_text(b, mrd::kHeader, stream_header_to_xml(sim.header()));
  send_all(fd.get(), b, 5.0);
  const std::int64_t t0 = monotonic_ns();
  for (long n = 0; n < total; ++n) {
    if (n == vanish_at) {
      r.vanished = true;
      ::shutdown(fd.get(), SHUT_RDWR);
      break;
    }
    sleep_until_ns(t0 + std::int64_t(double(n) * 1e9 / c.rate_hz));
    Spoke s = spokes[std::size_t(n % pool)];
    s.header.spoke_index = std::uint64_t(n);
    const auto head = acquisition_header_bytes(s.header, s.samples, s.coils, 2);
    b.clear();
    mrd::append_acquisition(b, head, s.traj, s.data);
    {
      std::lock_guard l(m);
      sent_ns[std::size_t(n)] = monotonic_ns();
    }
    if (!send_all(fd.get(), b, 5.0)) break;
    ++r.sent;
  }
  if (!r.vanished) {
    b.clear();
    mrd::append_close(b);
    send_all(fd.get(), b, 5.0);
    const std::int64_t deadline = monotonic_ns() + 60'000'000'000;
    while (!closed && monotonic_ns() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop = true;
  reader.join();
  return r;
}

nlohmann::ordered_json client_json(const ClientResult& r) {
  return {{"acquisitions_sent", r.sent},
          {"images_back", r.images},
          {"frames_due", r.frames_due},
          {"vanished", r.vanished},
          {"latency_sent_to_received_ms", to_json(percentiles_of(r.latency_ms))},
          {"steady_latency_sent_to_received_ms", to_json(percentiles_of(r.steady_ms))}};
}

std::vector<ClientResult> run_scanners(const BenchCase& c, const Registry& registry, int n, bool kill_one) {
  RunConfig cfg = live_run_config(c);
  cfg.mrd.listen = "tcp://127.0.0.1:*";
  cfg.mrd.max_sessions = n;
  cfg.mrd.pixels = MrdPixels::Int16;
  StreamRuntime p(cfg, registry, make_protocol_servers);
  p.start();
  const long total = long(c.rate_hz * c.duration_s);
  std::vector<ClientResult> out(static_cast<std::size_t>(n));
  std::vector<std::thread> clients;
  for (int k = 0; k < n; ++k)
    clients.emplace_back([&, k] {
      try {
        out[std::size_t(k)] =
            scanner(p.endpoint_of("mrd"), c, unsigned(100 + k), total, kill_one && k == 0 ? total / 2 : -1);
      } catch (const std::exception& e) {
        log::error("bench {}: scanner {} failed: {}", c.name, k, e.what());
      }
    });
  for (auto& t : clients) t.join();
  p.stop();
  log::info(
      "bench {}: {} scanner(s): {} sessions admitted, {} completed, {} failed; {} frames, {} skipped, {} "
      "failed",
      c.name, n, p.metrics().mrd.sessions_admitted.load(), p.metrics().mrd.sessions_completed.load(),
      p.metrics().mrd.sessions_failed.load(), p.metrics().frames.load(), p.metrics().frames_skipped.load(),
      p.metrics().frames_failed.load());
  return out;
}

}  // namespace

nlohmann::ordered_json mrd_sessions_case(const BenchCase& c, const Registry& registry) {
  const auto alone = run_scanners(c, registry, 1, false);
  const auto together = run_scanners(c, registry, c.sessions, c.kill_one);
  const double alone99 = percentiles_of(alone[0].latency_ms).p99,
               alone_steady99 = percentiles_of(alone[0].steady_ms).p99;
  double worst_ratio = 0, worst99 = 0, worst_steady_ratio = 0, worst_steady99 = 0;
  long missing = 0;
  nlohmann::ordered_json each = nlohmann::ordered_json::array();
  for (const auto& r : together) {
    each.push_back(client_json(r));
    if (r.vanished) continue;
    const double p99 = percentiles_of(r.latency_ms).p99, steady99 = percentiles_of(r.steady_ms).p99;
    worst99 = std::max(worst99, p99);
    worst_ratio = std::max(worst_ratio, alone99 > 0 ? p99 / alone99 : 0.0);
    worst_steady99 = std::max(worst_steady99, steady99);
    worst_steady_ratio = std::max(worst_steady_ratio, alone_steady99 > 0 ? steady99 / alone_steady99 : 0.0);
    if (r.frames_due >= 0) missing += std::max(0L, r.frames_due - r.images);
  }
  log::info(
      "bench {}: last acquisition sent -> image received p99: alone {:.3f} ms, worst of {} at once {:.3f} "
      "ms ({:.2f}x); after the first {} s: alone {:.3f} ms, worst {:.3f} ms ({:.2f}x); {} frames due not "
      "received",
      c.name, alone99, c.sessions, worst99, worst_ratio, kWarmupS, alone_steady99, worst_steady99,
      worst_steady_ratio, missing);
  return {{"case", c.name},
          {"what", c.what},
          {"kind", "mrd-sessions"},
          {"backend", to_string(c.backend)},
          {"sessions", c.sessions},
          {"kill_one", c.kill_one},
          {"rate_hz", c.rate_hz},
          {"duration_s", c.duration_s},
          {"window", c.spokes},
          {"stride", c.stride},
          {"alone_p99_ms", alone99},
          {"worst_p99_ms", worst99},
          {"worst_p99_over_alone", worst_ratio},
          {"warmup_s", kWarmupS},
          {"alone_steady_p99_ms", alone_steady99},
          {"worst_steady_p99_ms", worst_steady99},
          {"worst_steady_p99_over_alone", worst_steady_ratio},
          {"frames_due_not_received", missing},
          {"alone", client_json(alone[0])},
          {"clients", each}};
}

}  // namespace radstream::app
