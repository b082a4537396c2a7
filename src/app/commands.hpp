// The subcommands of the `radstream` program. Each registers its options on the CLI11 app and returns the
// function that runs it (exit code), so main() only dispatches.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>

namespace radstream::app {

using Runner = std::function<int()>;

Runner add_recon(CLI::App& app);
Runner add_simulate(CLI::App& app);
Runner add_demo(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_bench_exact(CLI::App& app);
Runner add_bench_split(CLI::App& app);
Runner add_batch(CLI::App& app);
Runner add_run(CLI::App& app);
Runner add_replay(CLI::App& app);
Runner add_nufft(CLI::App& app);
Runner add_convert(CLI::App& app);
Runner add_config_keys(CLI::App& app);
Runner add_keygen(CLI::App& app);
Runner add_estdelay(CLI::App& app);

}  // namespace radstream::app
