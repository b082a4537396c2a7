#include "stream/run_config.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/param_reader.hpp"

namespace radstream {

namespace {

template <class P>
void read_section(const YAML::Node& root, const char* name, P& p) {
  ParamReader r(root[name], name);
  p.visit(r);
  r.finish();
}

}  // namespace

void FrameParams::validate() const {
  ParamChecker c("frames");
  const_cast<FrameParams*>(this)->visit(c);
  if (window > max_window)
    throw ConfigError(fmt::format("frames.window = {} exceeds frames.max_window = {}", window, max_window));
}

void SinkParams::validate() const {
  ParamChecker c("sinks");
  const_cast<SinkParams*>(this)->visit(c);
  if (!record.empty() && (record.size() < 4 || record.substr(record.size() - 3) != ".h5"))
    throw ConfigError("sinks.record '" + record + "' must name an .h5 file");
}

RunConfig RunConfig::from_yaml(const YAML::Node& root, const std::string& context) {
  RunConfig c;
  try {
    const bool any = root.IsDefined() && !root.IsNull();
    if (any && !root.IsMap()) throw ConfigError("the file is not a YAML map of sections");
    if (any)
      for (const auto& kv : root) {
        const auto key = kv.first.as<std::string>();
        if (key != "stream" && key != "frames" && key != "sinks" && key != "recon" && key != "simulate")
          throw ConfigError("unknown section '" + key +
                            "' (expected stream, frames, sinks, recon, simulate)");
      }
    read_section(root, "stream", c.stream);
    read_section(root, "frames", c.frames);
    read_section(root, "sinks", c.sinks);
    c.recon = ReconParams::from_config(root["recon"]);
    c.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(context + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw ConfigError(context + ": " + e.what());
  }
  return c;
}

void RunConfig::validate() const {
  stream.validate();
  frames.validate();
  sinks.validate();
  recon.validate();
}

}  // namespace radstream
