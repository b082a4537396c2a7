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

  void add_to(CLI::App& app);
  // Defaults <- config file <- command line; validated. Throws ConfigError naming the option and value.
  ReconParams resolve() const;
};

}  // namespace radstream::app
