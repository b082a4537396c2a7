// radstream: real-time radial MRI reconstruction. One binary, one subcommand per job.
#include <spdlog/sinks/stdout_color_sinks.h>

#include <sys/resource.h>

#include <csignal>

#include <algorithm>
#include <iostream>
#include <map>

#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/param_reader.hpp"
#include "io/hdf5_errors.hpp"
#include "recon/recon_params.hpp"
#include "sim/simulator.hpp"
#include "stream/stream_runtime.hpp"
#include "version.hpp"

namespace {

// A receiver's sockets, recordings and outputs all take descriptors: the soft limit (often 1,024) is raised
// to the hard one (at most 65,536) where the system allows, so that a flood of connections meets ZeroMQ's own
// limits first. Returns the limits before and after (equal when nothing changed).
std::pair<rlim_t, rlim_t> raise_descriptor_limit() {
  rlimit l{};
  if (getrlimit(RLIMIT_NOFILE, &l) != 0) return {0, 0};
  const rlim_t before = l.rlim_cur;
  const rlim_t want = l.rlim_max == RLIM_INFINITY ? rlim_t(65536) : std::min<rlim_t>(l.rlim_max, 65536);
  if (want > l.rlim_cur) {
    l.rlim_cur = want;
    if (setrlimit(RLIMIT_NOFILE, &l) != 0) return {before, before};
  }
  return {before, l.rlim_cur};
}

struct ProgramOptions {
  bool version = false;
  std::string log_level = "info";

  template <class V>
  void visit(V& v) {
    v.field("version", version, "print the version and the commit, then exit");
    v.field("log_level", log_level, "trace|debug|info|warn|error|off");
  }
};

}  // namespace

int main(int argc, char** argv) {
  radstream::hdf5_skip_exit_cleanup();  // a recording abandoned after a write error stays as last flushed
  radstream::log::install_default_logger();
  // A reader that went away (a closed pipe after `| head`, a client's socket) is an EPIPE error where it is
  // written, reported there, never a silent death of the whole program by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");

  CLI::App app{"radstream: real-time reconstruction of radial MRI streams (CPU and CUDA)"};
  app.require_subcommand(0, 1);
  // The program's own options, declared like every command's; given before or after the subcommand.
  auto program = std::make_shared<radstream::app::DeclaredOptions>();
  program->add(app, "program", ProgramOptions{});

  std::map<CLI::App*, radstream::app::Runner> runners;
  auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->fallthrough();  // radstream recon --log-level warn: the program's option after the subcommand
    runners[sub] = adder(*sub);
  };
  add("recon", "offline reconstruction of a BART .cfl pair or an MRD .h5 file to .cfl or .png",
      radstream::app::add_recon);
  add("simulate",
      "the analytic phantom as a scanner: streamed over ZeroMQ (--endpoint) or into an MRD .h5 file",
      radstream::app::add_simulate);
  add("run",
      "listen for a spoke stream, reconstruct every frame, feed the sinks (record, publish, images, metrics)",
      radstream::app::add_run);
  add("replay", "stream a recorded MRD .h5 file back over ZeroMQ, paced by its timestamps",
      radstream::app::add_replay);
  add("demo",
      "the main job: simulated catheter phantom -> sliding-window reconstruction -> PNG frames + metrics",
      radstream::app::add_demo);
  add("nufft",
      "the NUFFT plan as a command, like `bart nufft`: image -> k-space, or k-space -> image with --adjoint",
      radstream::app::add_nufft);
  add("convert",
      "real radial data from a BART .cfl pair into an MRD file (for replay and the viewer), or one MRD "
      "format "
      "into the other (HDF5 <-> stream file)",
      radstream::app::add_convert);
  add("estdelay", "gradient delays of radial data by RING, printed as bart estdelay prints them (x:y:xy)",
      radstream::app::add_estdelay);
  add("bench", "time the reconstruction cases (R1, R2, R4, R7...) and write JSON", radstream::app::add_bench);
  add("bench-exact",
      "time and score the seeds' exact path (S1 F^H d 128^3, S2 seed 001 CG, S3 3D CG) and write JSON",
      radstream::app::add_bench_exact);
  add("batch", "replay many recordings under many parameter sets, spread over MPI ranks (mpirun -np N)",
      radstream::app::add_batch);
  add("bench-split",
      "time the coil split of a CG-SENSE frame over 1, 2, 4 GPUs (NCCL) or host partitions (M3)",
      radstream::app::add_bench_split);
  add("keygen", "make a CURVE key pair (NAME.key, NAME.pub) for authenticated streams (docs/security.md)",
      radstream::app::add_keygen);
  add("config-keys", "list every configuration key with its default, range and meaning (--markdown: a table)",
      radstream::app::add_config_keys);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints the help, the version or the error
    return code == 0 ? 0 : 2;      // a bad command line is a configuration error: exit 2, as documented
  }
  ProgramOptions po;
  try {
    program->apply("program", po);
    radstream::log::set_level(po.log_level);
  } catch (const radstream::ConfigError& e) {
    std::cerr << "radstream: " << e.what() << "\n";
    return 2;
  }
  if (const auto [before, after] = raise_descriptor_limit(); after != before)
    radstream::log::debug("descriptors: soft limit raised from {} to {}", before, after);
  if (po.version) {
    std::cout << "radstream " << RADSTREAM_VERSION << " (commit " << RADSTREAM_COMMIT << ")\n";
    return 0;
  }
  if (app.get_subcommands().empty()) {  // a subcommand is required (--version and --help are handled above)
    std::cerr << app.help() << "\nradstream: a subcommand is required\n";
    return 2;
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const radstream::ConfigError& e) {
    spdlog::error("configuration: {}", e.what());
    return 2;
  } catch (const radstream::IoError& e) {
    spdlog::error("{}", e.what());
    return 3;
  } catch (const radstream::InputError& e) {
    spdlog::error("bad input: {}", e.what());
    return 4;
  } catch (const radstream::NumericError& e) {  // finite data whose image is not: bad input too
    spdlog::error("bad input: {}", e.what());
    return 4;
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
    return 1;
  }
  return 1;
}
