#include "app/recon_options.hpp"

#include <yaml-cpp/yaml.h>

#include "core/error.hpp"

namespace radstream::app {

void add_recon_options(CLI::App& app, DeclaredOptions& o, bool config_option) {
  if (config_option) o.add(app, "file", ConfigFileArg{}, config_file_style());
  DeclaredOptions::Style style;
  style.names = {{"kernel_width", "--kernel-width,--width"}};
  style.bool_values = true;
  o.add(app, "recon", ReconParams{}, style);
}

ReconParams resolve_recon(const DeclaredOptions& o, bool exact_methods) {
  ConfigFileArg f;
  o.apply("file", f);
  ReconParams p;
  if (!f.config.empty()) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(f.config);
    } catch (const YAML::Exception& e) {
      throw ConfigError(f.config + ": " + e.what());
    }
    try {
      p = ReconParams::from_config(root["recon"]);
    } catch (const ConfigError& e) {
      throw ConfigError(f.config + ": " + e.what());
    }
  }
  o.apply("recon", p);
  p.validate(exact_methods);
  return p;
}

}  // namespace radstream::app
