// Command-line options that set reconstruction parameters, shared by the subcommands that reconstruct.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "pipeline/recon_params.hpp"

namespace radstream::app {

struct ReconOptions {
  std::string config;  // YAML file with a recon: section
  std::optional<std::string> method, fbp_filter, dcf, backend, fft, planner;
  std::optional<double> fbp_cutoff;
  std::optional<int> width, lut, threads;
  std::optional<double> oversampling;

  // config_option: also offer -c/--config (a subcommand with a config of its own, like run, says false).
  void add_to(CLI::App& app, bool config_option = true);
  // Defaults <- config file <- command line; validated. Throws ConfigError naming the option and value.
  ReconParams resolve() const;
  // The command-line values over p (not validated).
  void apply(ReconParams& p) const;
};

}  // namespace radstream::app
