// radstream bench-exact: the seeds' figures for the exact path (bench/bench_exact.hpp).
#include "app/commands.hpp"
#include "app/declared_options.hpp"
#include "bench/bench_exact.hpp"

namespace radstream::app {

Runner add_bench_exact(CLI::App& app) {
  return declared_command(app, "bench-exact", BenchExactArgs{}, {},
                          [](const BenchExactArgs& a) { return run_bench_exact(a); });
}

}  // namespace radstream::app
