#include "app/recon_options.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "core/error.hpp"
#include "core/param_reader.hpp"

namespace radstream::app {

namespace {

std::string option_name(const std::string& key) {
  std::string o = "--" + key;
  for (auto& c : o)
    if (c == '_') c = '-';
  if (key == "kernel_width") o += ",--width";  // the name it has always had
  return o;
}

// Adds one option per declared key; the value is kept as typed and read later by ParamReader.
class OptionAdder {
 public:
  OptionAdder(CLI::App& app, ReconOptions& o) : app_(app), o_(o) {}
  template <class T>
  void field(const char* key, const T& value, T lo, T hi, const char* help) {
    add(key, fmt::format("{} ({}..{}, default {})", help, lo, hi, value));
  }
  void field(const char* key, const bool& value, const char* help) {
    add(key, fmt::format("{} (true | false, default {})", help, value));
  }
  void field(const char* key, const std::string& value, const char* help) {
    add(key, fmt::format("{} (default '{}')", help, value));
  }
  template <class E, std::size_t N>
  void choice(const char* key, const E& value, const EnumTable<E, N>& table, const char* help) {
    add(key, fmt::format("{}: {} (default {})", help, table.list(" | "), table.name(value)));
  }

 private:
  void add(const char* key, const std::string& help) {
    const std::string names = option_name(key);
    o_.option_of[key] = names.substr(0, names.find(','));
    auto* given = &o_.given;
    const std::string k = key;
    app_.add_option_function<std::string>(names, [given, k](const std::string& s) { (*given)[k] = s; }, help);
  }
  CLI::App& app_;
  ReconOptions& o_;
};

}  // namespace

void ReconOptions::add_to(CLI::App& app, bool config_option) {
  if (config_option)
    app.add_option("-c,--config", config, "YAML config file whose recon: section sets the defaults");
  ReconParams defaults;
  OptionAdder adder(app, *this);
  defaults.visit(adder);
}

ReconParams ReconOptions::resolve() const {
  ReconParams p;
  if (!config.empty()) {
    YAML::Node root;
    try {
      root = YAML::LoadFile(config);
    } catch (const YAML::Exception& e) {
      throw ConfigError(config + ": " + e.what());
    }
    try {
      p = ReconParams::from_config(root["recon"]);
    } catch (const ConfigError& e) {
      throw ConfigError(config + ": " + e.what());
    }
  }
  apply(p);
  p.validate();
  return p;
}

void ReconOptions::apply(ReconParams& p) const {
  for (const auto& [key, value] : given) {
    YAML::Node node;
    node[key] = value;
    try {
      ParamReader reader(node, "recon");
      p.visit(reader);
      reader.finish();
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{} {}: {}", option_of.at(key), value, e.what()));
    }
  }
}

}  // namespace radstream::app
