// radstream simulate: the analytic phantom as a scanner streams it: over ZeroMQ at a spoke rate
// (--endpoint), or into an MRD file (--out).
#include <ctime>
#include <memory>

#include "app/commands.hpp"
#include "app/enum_option.hpp"
#include "app/interrupt.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"
#include "stream/metrics.hpp"
#include "wire/sender.hpp"
#include "io/output_path.hpp"
#include "wire/sim_streamer.hpp"

namespace radstream::app {
namespace {

struct SimArgs {
  SimParams sim;
  std::string out;
  long spokes = -1;  // -1: 256 for a file, endless for a stream
  SenderParams sender;
  bool streaming = false;
  double duration_s = 0;  // 0: until --spokes or Ctrl-C
  int pool = 0;           // precomputed spokes, cycled (for rates beyond live generation)
  double header_every_s = 1.0;
  std::uint32_t stream_id = 0;
  double wait_s = 10;
  bool no_wait = false;
  bool overwrite = false;
};

int write_file(const SimArgs& a) {
  const long n_spokes = a.spokes < 0 ? 256 : a.spokes;
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
  sp.spokes = a.spokes >= 0 ? a.spokes : a.duration_s > 0 ? long(a.duration_s * a.sim.rate_hz) : -1;
  sp.pool = a.pool;
  sp.header_every_s = a.header_every_s;
  sp.stream_id = a.stream_id;
  sp.wait_for_peer_s = a.no_wait ? 0.0 : a.wait_s;
  SimStreamer streamer(a.sim, sp);
  streamer.run([&] { return interrupt.requested(); });
  return 0;
}

}  // namespace

Runner add_simulate(CLI::App& app) {
  auto a = std::make_shared<SimArgs>();
  SimParams& p = a->sim;
  app.add_option("--out", a->out, "write an MRD .h5 file instead of streaming (its folder is made)");
  app.add_flag("--overwrite", a->overwrite, "allow --out to replace an existing file");
  app.add_option("--endpoint", a->sender.endpoint, "stream to this ZeroMQ endpoint (tcp://127.0.0.1:5555)");
  app.add_option("--curve-server-key", a->sender.curve_server_key,
                 "CURVE: the receiver's public key file (.pub from radstream keygen)");
  app.add_option("--curve-key", a->sender.curve_key, "CURVE: this sender's key pair file (.key), on the receiver's allow-list");
  add_enum_option(app, "--socket", a->sender.socket, kSendSockets, "push (lossless) or pub (a tap that may drop)");
  app.add_flag("--bind", a->sender.bind, "bind the endpoint instead of connecting");
  app.add_option("--wait", a->wait_s, "seconds to wait for a receiver before failing (default 10)");
  app.add_flag("--no-wait", a->no_wait, "send even when no receiver is connected");
  app.add_option("--spokes", a->spokes, "number of spokes (file: default 256; stream: default endless)");
  app.add_option("--duration", a->duration_s, "stream for this many seconds (default: until Ctrl-C)");
  app.add_option("--pool", a->pool,
                 "precompute this many spokes and send them cyclically (rates beyond live generation)");
  app.add_option("--header-every", a->header_every_s, "seconds between repeated stream headers (default 1)");
  app.add_option("--stream-id", a->stream_id, "stream id (default random)");
  app.add_option("--matrix", p.matrix, "image matrix N (default 256)");
  app.add_option("--readout-os", p.readout_os,
                 "readout oversampling: samples per spoke = os x N (default 2)");
  app.add_option("--coils", p.coils, "coils, 1..64 (default 8)");
  app.add_option("--slices", p.slices,
                 "slices interleaved spoke by spoke (idx.slice), each its own plane of the phantom (default 1)");
  app.add_option("--angles", p.angles, "linear180|linear360|golden|tiny-golden (default golden)");
  app.add_option("--tiny-n", p.tiny_n, "tiny golden angle order 2..10 (default 5)");
  app.add_option("--spokes-per-rotation", p.spokes_per_rotation,
                 "spokes per rotation, linear schemes (default 256)");
  app.add_option("--snr", p.snr, "k-space SNR (RMS signal / RMS noise), 0 = noiseless (default 0)");
  app.add_flag("--motion", p.motion, "add a moving catheter-tip ellipse");
  app.add_option("--rate", p.rate_hz, "spokes per second (default 400)");
  app.add_option("--seed", p.seed, "noise seed (default 1)");
  auto* ep = app.get_option("--endpoint");
  return [a, ep] {
    if (!a->out.empty() && ep->count() > 0)
      throw ConfigError("simulate: give --out FILE.h5 or --endpoint, not both");
    if (a->out.empty() && ep->count() == 0)
      throw ConfigError(
          "simulate: give --endpoint tcp://HOST:PORT to stream, or --out FILE.h5 to write a file");
    return a->out.empty() ? stream(*a) : write_file(*a);
  };
}

}  // namespace radstream::app
