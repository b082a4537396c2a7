// radstream bench: named cases, each stage timed after a warm-up (bench/bench_run.hpp).
#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "bench/bench_plot.hpp"
#include "bench/bench_run.hpp"
#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream::app {

Runner add_bench(CLI::App& app) {
  return declared_command(app, "bench", BenchRun{}, {}, [](const BenchRun& a) {
    if (!a.backend.empty() && a.backend != "cpu")
      throw ConfigError("--backend " + a.backend +
                        ": the only choice is cpu (the GPU chain cases on the CPU)");
    if (!a.plot.empty()) {
      for (const auto& f : plot_bench_scaling(a.plot)) log::info("bench: wrote {}", f);
      return 0;
    }
    return run_bench(a);
  });
}

}  // namespace radstream::app
