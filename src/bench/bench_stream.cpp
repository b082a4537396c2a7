#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "bench/bench_case.hpp"
#include "core/log.hpp"
#include "ingest/protocols.hpp"
#include "ingest/zmq/zmq_ingest.hpp"
#include "sim/simulator.hpp"
#include "stream/host_stall_probe.hpp"
#include "stream/stream_runtime.hpp"
#include "wire/sim_streamer.hpp"

namespace radstream::app {

SimParams bench_sim_params(const BenchCase& c) {
  SimParams sp;
  sp.matrix = c.matrix;
  sp.readout_os = double(c.samples) / c.matrix;
  sp.coils = c.coils;
  sp.snr = 50;
  sp.motion = true;
  sp.slices = c.slices;
  sp.partitions = c.partitions;
  if (c.partitions > 1) sp.partition_order = "centre-out";
  sp.partition_rotation_deg = c.partition_rotation_deg;
  sp.rate_hz = c.rate_hz * c.slices;  // every slice at rate_hz
  return sp;
}

std::unique_ptr<SimStreamer> bench_streamer(const BenchCase& c, int pool, long spokes, bool unpaced) {
  const SimParams sp = bench_sim_params(c);
  StreamerParams p;
  p.sender.endpoint = "tcp://127.0.0.1:" + std::to_string(c.port);
  p.pool = pool;
  p.spokes = spokes;
  p.unpaced = unpaced;
  return std::make_unique<SimStreamer>(sp, p);
}

RunConfig live_run_config(const BenchCase& c) {
  RunConfig cfg;
  cfg.stream.endpoint = "tcp://127.0.0.1:" + std::to_string(c.port);
  cfg.frames.window = c.spokes;
  cfg.frames.stride = c.stride;
  cfg.frames.max_window = std::max(c.spokes, 64);
  cfg.sinks.report_interval_s = 0;
  cfg.recon = c.recon;
  cfg.recon.backend = c.backend == Backend::Cuda ? BackendChoice::Cuda : BackendChoice::Cpu;
  return cfg;
}

nlohmann::ordered_json ingest_case(const BenchCase& c) {
  const auto sim = bench_streamer(c, 256, c.total_spokes, true);
  zmq::context_t rctx(1);
  Metrics metrics;
  IngestParams ip;
  ip.endpoint = "tcp://127.0.0.1:" + std::to_string(c.port);
  ZmqIngest ingest(rctx, ip, metrics, false, 64);
  ingest.start();
  const std::int64_t t_first = monotonic_ns();
  sim->run();
  const std::int64_t sent_done = monotonic_ns();
  // Wait for the ingest to take everything (or to stop making progress).
  std::uint64_t last = 0;
  std::int64_t last_change = monotonic_ns();
  while (metrics.spokes.load() < std::uint64_t(c.total_spokes) && monotonic_ns() - last_change < 2000000000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (metrics.spokes.load() != last) {
      last = metrics.spokes.load();
      last_change = monotonic_ns();
    }
  }
  const std::int64_t t_end = monotonic_ns();
  ingest.stop();
  const double secs = double(t_end - t_first) * 1e-9;
  const std::uint64_t got = metrics.spokes.load();
  const double bytes_per_spoke = double(c.samples) * c.coils * 8 + double(c.samples) * 8 + 64 + 340;
  const double rate = double(got) / secs;
  log::info(
      "bench {}: {} of {} spokes in {:.3f} s: {:.0f} spokes/s, {:.2f} GB/s, lost {}, missing {}, rejected {}",
      c.name, got, c.total_spokes, secs, rate, rate * bytes_per_spoke * 1e-9, c.total_spokes - long(got),
      metrics.missing.load(), metrics.rejected_total());
  return {{"case", c.name},
          {"what", c.what},
          {"kind", "ingest"},
          {"spokes_sent", c.total_spokes},
          {"spokes_received", got},
          {"seconds", secs},
          {"sender_seconds", double(sent_done - t_first) * 1e-9},
          {"spokes_per_s", rate},
          {"gb_per_s", rate * bytes_per_spoke * 1e-9},
          {"lost", c.total_spokes - long(got)},
          {"missing", metrics.missing.load()},
          {"rejected", metrics.rejected_total()},
          {"coils", c.coils},
          {"samples", c.samples}};
}

namespace {

// The probe's stalls (counts over 1, 2 and 5 ms, the ten largest), how many deadline misses overlapped one
// (logged when there were misses), and each miss logged: when (s since start_ns), its solve time and the
// deadline's reserve it ran with (whether the misses came before the reserve was learned or despite it).
nlohmann::ordered_json host_stall_json(const HostStallProbe& probe, const Metrics& m, std::int64_t start_ns) {
  std::vector<HostStall> st = probe.stalls();
  const std::vector<DeadlineMiss> misses = m.deadline_miss_log();
  const int in_stalls = misses_in_stalls(misses, st);
  std::size_t over2 = 0, over5 = 0;
  for (const HostStall& s : st) {
    over2 += s.late_ns > 2'000'000;
    over5 += s.late_ns > 5'000'000;
  }
  std::sort(st.begin(), st.end(),
            [](const HostStall& a, const HostStall& b) { return a.late_ns > b.late_ns; });
  nlohmann::ordered_json largest = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < st.size() && i < 10; ++i) largest.push_back(double(st[i].late_ns) * 1e-6);
  nlohmann::ordered_json miss_list = nlohmann::ordered_json::array();
  for (const DeadlineMiss& d : misses)
    miss_list.push_back({{"t_s", double(d.end_ns - start_ns) * 1e-9},
                         {"solve_ms", d.solve_ms},
                         {"reserve_ms", d.reserve_ms}});
  if (!misses.empty())
    log::info(
        "bench: {} of the {} deadline misses logged overlapped a host stall (a thread sleeping 1 ms "
        "at a time woke > 1 ms late {} times, at most {:.2f} ms)",
        in_stalls, misses.size(), st.size(), st.empty() ? 0.0 : double(st[0].late_ns) * 1e-6);
  return {{"probe", "a thread sleeping 1 ms at a time: its wake-ups more than 1 ms late"},
          {"wakeups", probe.wakeups()},
          {"late_over_1ms", st.size()},
          {"late_over_2ms", over2},
          {"late_over_5ms", over5},
          {"largest_ms", largest},
          {"deadline_misses_logged", misses.size()},
          {"deadline_misses_in_a_stall", in_stalls},
          {"deadline_misses", miss_list}};
}

}  // namespace

nlohmann::ordered_json live_case(const BenchCase& c, const Registry& registry) {
  const int pool = std::max(512, (c.spokes + 2 * c.stride) * c.partitions) * c.slices;
  const auto sim = bench_streamer(c, pool, long(c.rate_hz * c.duration_s) * c.slices, false);
  RunConfig cfg = live_run_config(c);
  cfg.stream.slices = c.slices;
  cfg.placement.gpus = c.gpus;
  StreamRuntime p(cfg, registry, make_protocol_servers);
  HostStallProbe probe;
  const std::int64_t start_ns = monotonic_ns();
  p.start();
  const long total = long(c.rate_hz * c.duration_s) * c.slices;
  sim->run();
  const std::int64_t behind_ns = sim->max_late_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  p.stop();
  probe.stop();
  Metrics& m = p.metrics();
  const nlohmann::ordered_json host = host_stall_json(probe, m, start_ns);
  const auto e2e = m.end_to_end.summary(), arr = m.arrival.summary();
  log::info(
      "bench {}: {} spokes at {} /s, {} frames ({} skipped, {} failed), latency last spoke arrived -> image "
      "ready p50 {:.3f} p99 {:.3f} max {:.3f} ms; acquired -> ready p99 {:.3f} ms; sender late by <= {:.2f} "
      "ms",
      c.name, m.spokes.load(), c.rate_hz, m.frames.load(), m.frames_skipped.load(), m.frames_failed.load(),
      arr.p50, arr.p99, arr.max, e2e.p99, double(behind_ns) * 1e-6);
  nlohmann::ordered_json per_slice = nlohmann::ordered_json::array();
  for (int s = 0; s < c.slices; ++s) {
    const auto sa = m.slice(s).arrival.summary();
    log::info("bench {}: slice {} on GPU {}: {} frames, arrived -> ready p50 {:.3f} p99 {:.3f} ms", c.name, s,
              p.slice_gpu(s), m.slice(s).frames.load(), sa.p50, sa.p99);
    per_slice.push_back({{"slice", s},
                         {"gpu", p.slice_gpu(s)},
                         {"frames", m.slice(s).frames.load()},
                         {"latency_arrival_to_ready_ms", to_json(sa)}});
  }
  return {{"case", c.name},
          {"what", c.what},
          {"kind", "live"},
          {"backend", to_string(c.backend)},
          {"rate_hz", c.rate_hz},
          {"window", c.spokes},
          {"stride", c.stride},
          {"spokes_sent", total},
          {"spokes_received", m.spokes.load()},
          {"missing", m.missing.load()},
          {"frames", m.frames.load()},
          {"frames_skipped", m.frames_skipped.load()},
          {"frames_failed", m.frames_failed.load()},
          {"latency_arrival_to_ready_ms", to_json(arr)},
          {"latency_acquired_to_ready_ms", to_json(e2e)},
          {"solver_deadline_misses", m.deadline_misses.load()},
          {"solver_solve_ms", to_json(m.solver_ms.summary())},
          {"solver_deadline_overrun_ms", to_json(m.deadline_overrun_ms.summary())},
          {"solver_deadline_early_stops", m.deadline_stops.load()},
          {"solver_deadline_reserve_ms", m.deadline_reserve_ms.load()},
          {"solver_deadline_reserve_max_ms", m.deadline_reserve_max_ms.load()},
          {"sender_max_late_ms", double(behind_ns) * 1e-6},
          {"host_stalls", host},
          {"slices", c.slices},
          {"partitions", c.partitions},
          {"volume_spokes_missing", m.volume_spokes_missing.load()},
          {"gpus", c.gpus},
          {"per_slice", per_slice},
          {"metrics", m.to_json(p.elapsed_s())}};
}

}  // namespace radstream::app
