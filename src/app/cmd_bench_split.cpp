// radstream bench-split: M3, the coil split of one CG-SENSE frame (bench/bench_split_run.hpp).
#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "bench/bench_split_run.hpp"

namespace radstream::app {

Runner add_bench_split(CLI::App& app) {
  return declared_command(app, "bench-split", SplitOptions{}, {},
                          [](const SplitOptions& o) { return run_bench_split(o); });
}

}  // namespace radstream::app
