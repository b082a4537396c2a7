// radstream simulate: the analytic phantom as a scanner streams it: over ZeroMQ at a spoke rate
// (--endpoint), or into an MRD file (--out).
#include <algorithm>
#include <cmath>
#include <ctime>
#include <memory>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "app/interrupt.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_file.hpp"
#include "io/output_path.hpp"
#include "sim/simulator.hpp"
#include "stream/metrics.hpp"
#include "wire/sender.hpp"
#include "wire/sim_streamer.hpp"

namespace radstream::app {
namespace {

// Where the simulated spokes go and how many (the phantom's settings are SimParams', the socket's
// SenderOptions').
struct SimControl {
  std::string out;
  bool overwrite = false;
  long spokes = -1;       // -1: 256 for a file, endless for a stream
  double duration_s = 0;  // 0: until --spokes or Ctrl-C
  int pool = 0;           // precomputed spokes, cycled (for rates beyond live generation)
  double header_every_s = 1.0;
  std::uint32_t stream_id = 0;
  double wait_s = 10;
  bool no_wait = false;

  template <class V>
  void visit(V& v) {
    v.field("out", out, "write an MRD .h5 file instead of streaming (its folder is made)");
    v.field("overwrite", overwrite, "allow --out to replace an existing file");
    v.field("wait", wait_s, 0.0, 1e6, "seconds to wait for a receiver before failing");
    v.field("no_wait", no_wait, "send even when no receiver is connected");
    v.field("spokes", spokes, -1L, 1L << 40,
            "number of spokes (-1: a file 256 or --duration-s x --rate, a stream endless)");
    v.field("duration", duration_s, 0.0, 1e9,
            "stream for this many seconds (0: until Ctrl-C); with --out, write this many seconds of spokes");
    v.field("pool", pool, 0, 1 << 24,
            "precompute this many spokes and send them cyclically (rates beyond live generation)");
    v.field("header_every", header_every_s, 0.0, 3600.0, "seconds between repeated stream headers");
    v.field("stream_id", stream_id, std::uint32_t(0), ~std::uint32_t(0), "stream id (0: random)");
  }
};

struct SimArgs : SimControl {
  SimParams sim;
  SenderParams sender;
  bool streaming = false;
};

int write_file(const SimArgs& a) {
  if (a.spokes >= 0 && a.duration_s > 0)
    throw ConfigError(
        "simulate --out: --spokes and --duration-s both say how many spokes to write; give one");
  // --duration-s D with --out: the D seconds a scanner at --rate would take, D x rate spokes.
  const long n_spokes = a.spokes >= 0      ? a.spokes
                        : a.duration_s > 0 ? std::max(1L, std::lround(a.duration_s * a.sim.rate_hz))
                                           : 256;
  if (n_spokes < 1) throw ConfigError("--spokes " + std::to_string(n_spokes) + " must be >= 1");
  check_output_file(a.out, "--out", a.overwrite);  // before the simulator's set-up: never replaced silently
  const Simulator sim(a.sim);
  MrdWriter writer(a.out, sim.header(), a.stream_id);
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kBatch = 64;
  auto last_report = t0;
  for (long first = 0; first < n_spokes; first += kBatch) {
    const int n = int(std::min<long>(kBatch, n_spokes - first));
    for (const Spoke& s : sim.spokes(std::uint64_t(first), n)) writer.append(s);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report > std::chrono::seconds(2)) {
      log::info("simulate: {}/{} spokes written", first + n, n_spokes);
      last_report = now;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info("simulate: wrote {} spokes ({} samples x {} coils, {} angles) to {} in {:.2f} s", n_spokes,
            sim.samples(), a.sim.coils, a.sim.angles, a.out, s);
  return 0;
}

int stream(const SimArgs& a) {
  InterruptWatch interrupt;
  StreamerParams sp;
  sp.sender = a.sender;
  sp.spokes = a.spokes;
  sp.duration_s = a.duration_s;  // wall time: a machine that cannot keep up still stops on time
  sp.pool = a.pool;
  sp.header_every_s = a.header_every_s;
  sp.stream_id = a.stream_id;
  sp.wait_for_peer_s = a.no_wait ? 0.0 : a.wait_s;
  SimStreamer streamer(a.sim, sp);
  streamer.run([&] { return interrupt.requested(); });
  // An endless stream ends with Ctrl-C; one of a given length that was interrupted is incomplete.
  if (!streamer.complete() && (a.spokes >= 0 || a.duration_s > 0)) return 130;
  return 0;
}

}  // namespace

Runner add_simulate(CLI::App& app) {
  auto o = std::make_shared<DeclaredOptions>();
  o->add(app, "simulate", SimControl{});
  o->add(app, "sender", SenderParams{});
  o->add(app, "phantom", SimParams{},
         {{{"rate_hz", "--rate"}, {"readout_oversampling", "--readout-os"}, {"tiny_golden_n", "--tiny-n"}}});
  return [o] {
    SimArgs a;
    o->apply("simulate", static_cast<SimControl&>(a));
    o->apply("sender", a.sender);
    o->apply("phantom", a.sim);
    const bool endpoint = o->given("sender", "endpoint");
    if (!a.out.empty() && endpoint) throw ConfigError("simulate: give --out FILE.h5 or --endpoint, not both");
    if (a.out.empty() && !endpoint)
      throw ConfigError(
          "simulate: give --endpoint tcp://HOST:PORT to stream, or --out FILE.h5 to write a file");
    return a.out.empty() ? stream(a) : write_file(a);
  };
}

}  // namespace radstream::app
