// Command-line options that set reconstruction parameters, shared by the subcommands that reconstruct
// (recon, run, demo). They are generated from ReconParams::visit() (app/declared_options.hpp) into the
// command's declared options: one option per key (`--kernel-width` for kernel_width, `--width` kept as its
// short name; bools take a value, `--warm-start false`), parsed and range-checked by the same reader as the
// YAML files, so the CLI, the config files, the viewer and the README table cannot disagree.
#pragma once
#include <string>

#include "app/declared_options.hpp"
#include "recon/recon_params.hpp"

namespace radstream::app {

// A command's config file (-c/--config), declared like every option.
struct ConfigFileArg {
  std::string config;
  template <class V>
  void visit(V& v) {
    v.field("config", config,
            "YAML config file (its sections set the defaults; the options given override them)");
  }
};
inline DeclaredOptions::Style config_file_style() {
  return {{{"config", "-c,--config"}}, {}, {}, false};
}

// Adds the recon section's options (and, with config_option, -c/--config: its recon: section sets the
// defaults; a subcommand with a config of its own, like run, says false).
void add_recon_options(CLI::App& app, DeclaredOptions& o, bool config_option = true);
// Defaults <- config file <- command line; validated (the exact methods only where exact_methods: recon).
// Throws ConfigError naming the option and value.
ReconParams resolve_recon(const DeclaredOptions& o, bool exact_methods = false);

}  // namespace radstream::app
