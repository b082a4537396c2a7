// Command-line options that set reconstruction parameters, shared by the subcommands that reconstruct
// (recon, run, demo). They are generated from ReconParams::visit(): one option per key (`--kernel-width` for
// kernel_width; `--width` kept as its short name), with the key's help, default and range, parsed and
// range-checked by the same reader as the YAML files, so the CLI, the config files, the viewer and the README
// table cannot disagree.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "recon/recon_params.hpp"

namespace radstream::app {

struct ReconOptions {
  std::string config;                        // YAML file with a recon: section
  std::map<std::string, std::string> given;  // key -> value as typed
  std::map<std::string, std::string> option_of;  // key -> the option's name, for messages

  // config_option: also offer -c/--config (a subcommand with a config of its own, like run, says false).
  void add_to(CLI::App& app, bool config_option = true);
  // Defaults <- config file <- command line; validated. Throws ConfigError naming the option and value.
  ReconParams resolve() const;
  // The command-line values over p (range-checked, not validated as a whole).
  void apply(ReconParams& p) const;
};

}  // namespace radstream::app
