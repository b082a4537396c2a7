// radstream simulate: the analytic phantom as a scanner would stream it; for now into an MRD file.
#include <chrono>

#include "app/commands.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/mrd_file.hpp"
#include "sim/simulator.hpp"

namespace radstream::app {
namespace {

struct SimArgs {
  SimParams sim;
  std::string out;
  long spokes = 256;
};

int run_simulate(const SimArgs& a) {
  if (a.spokes < 1) throw ConfigError("--spokes " + std::to_string(a.spokes) + " must be >= 1");
  const Simulator sim(a.sim);
  MrdWriter writer(a.out, sim.header());
  const auto t0 = std::chrono::steady_clock::now();
  constexpr int kBatch = 64;
  auto last_report = t0;
  for (long first = 0; first < a.spokes; first += kBatch) {
    const int n = int(std::min<long>(kBatch, a.spokes - first));
    for (const Spoke& s : sim.spokes(std::uint64_t(first), n)) writer.append(s);
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report > std::chrono::seconds(2)) {
      log::info("simulate: {}/{} spokes written", first + n, a.spokes);
      last_report = now;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log::info("simulate: wrote {} spokes ({} samples x {} coils, {} angles) to {} in {:.2f} s", a.spokes,
            sim.samples(), a.sim.coils, a.sim.angles, a.out, s);
  return 0;
}

}  // namespace

Runner add_simulate(CLI::App& app) {
  auto a = std::make_shared<SimArgs>();
  SimParams& p = a->sim;
  app.add_option("--out", a->out, "MRD .h5 file to write")->required();
  app.add_option("--spokes", a->spokes, "number of spokes (default 256)");
  app.add_option("--matrix", p.matrix, "image matrix N (default 256)");
  app.add_option("--readout-os", p.readout_os,
                 "readout oversampling: samples per spoke = os x N (default 2)");
  app.add_option("--coils", p.coils, "coils, 1..64 (default 8)");
  app.add_option("--angles", p.angles, "linear180|linear360|golden|tiny-golden (default golden)");
  app.add_option("--tiny-n", p.tiny_n, "tiny golden angle order 2..10 (default 5)");
  app.add_option("--spokes-per-rotation", p.spokes_per_rotation,
                 "spokes per rotation, linear schemes (default 256)");
  app.add_option("--snr", p.snr, "k-space SNR (RMS signal / RMS noise), 0 = noiseless (default 0)");
  app.add_flag("--motion", p.motion, "add a moving catheter-tip ellipse");
  app.add_option("--rate", p.rate_hz, "spokes per second, sets the timestamps and the motion (default 400)");
  app.add_option("--seed", p.seed, "noise seed (default 1)");
  return [a] { return run_simulate(*a); };
}

}  // namespace radstream::app
