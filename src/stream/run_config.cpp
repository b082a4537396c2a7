#include "stream/run_config.hpp"

#include "core/gpu_list.hpp"
#include "wire/endpoint.hpp"

#include <fmt/format.h>

#include <tuple>

#include "core/error.hpp"
#include "core/log.hpp"
#include "core/param_reader.hpp"
#include "gpu/cuda_runtime.hpp"
#include "wire/curve.hpp"

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
    throw ConfigError(
        fmt::format("--window {} is above frames.max_window {} (the size of the spoke ring): "
                    "take a smaller window or raise --max-window",
                    window, max_window));
}

void SinkParams::validate() const {
  ParamChecker c("sinks");
  const_cast<SinkParams*>(this)->visit(c);
  if (!record.empty() && !record.ends_with(".h5") && !record.ends_with(".mrd") && !record.ends_with(".mrd2"))
    throw ConfigError(
        "sinks.record '" + record +
        "' must name an .h5 file (MRD HDF5), an .mrd file (an MRD stream file) or an .mrd2 file "
        "(MRD 2)");
}

std::vector<int> PlacementParams::gpu_list(int device_count) const {
  std::vector<int> out = parse_gpu_list(gpus, "placement.gpus");
  check_gpus_exist(out, device_count, "placement.gpus");
  return out;
}

std::vector<int> PlacementParams::assign_slices(int slices, int device_count) const {
  const std::vector<int> list = gpu_list(device_count);
  std::vector<int> of;
  if (list.empty()) return of;
  std::vector<int> load(list.size(), 0);
  std::vector<std::size_t> free(list.size(), 0);
  if (assign == GpuAssign::LeastLoaded)
    for (std::size_t i = 0; i < list.size(); ++i) free[i] = gpu::free_memory(list[i]);
  for (int s = 0; s < slices; ++s) {
    std::size_t pick = std::size_t(s) % list.size();
    if (assign == GpuAssign::LeastLoaded) {
      pick = 0;
      for (std::size_t i = 1; i < list.size(); ++i)
        if (load[i] < load[pick] || (load[i] == load[pick] && free[i] > free[pick])) pick = i;
    }
    ++load[pick];
    of.push_back(list[pick]);
  }
  return of;
}

RunConfig RunConfig::from_yaml(const YAML::Node& root, const std::string& context) {
  RunConfig c;
  try {
    const bool any = root.IsDefined() && !root.IsNull();
    if (any && !root.IsMap()) throw ConfigError("the file is not a YAML map of sections");
    if (any)
      for (const auto& kv : root) {
        const auto key = kv.first.as<std::string>();
        if (key != "stream" && key != "frames" && key != "sinks" && key != "recon" && key != "simulate" &&
            key != "placement" && key != "mrd")
          throw ConfigError("unknown section '" + key +
                            "' (expected stream, frames, sinks, recon, placement, mrd, simulate)");
      }
    read_section(root, "stream", c.stream);
    read_section(root, "frames", c.frames);
    read_section(root, "sinks", c.sinks);
    read_section(root, "placement", c.placement);
    read_section(root, "mrd", c.mrd);
    c.recon = ReconParams::from_config(root["recon"]);
    c.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(context + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw ConfigError(context + ": " + e.what());
  }
  return c;
}

SessionConfig session_config_from_yaml(const YAML::Node& root, const RunConfig& base,
                                       const std::string& context) {
  SessionConfig c{base.recon, base.frames};
  try {
    if (!root.IsDefined() || root.IsNull()) return c;
    if (!root.IsMap()) throw ConfigError("the text is not a YAML map of sections");
    for (const auto& kv : root) {
      const auto key = kv.first.as<std::string>();
      if (key != "frames" && key != "recon")
        throw ConfigError("section '" + key +
                          "' is the server's, not a session's (a session's config has recon: and frames:)");
    }
    if (root["recon"]) c.recon = ReconParams::from_config(root["recon"]);
    if (root["frames"]) read_section(root, "frames", c.frames);  // over the server's window and stride
    c.frames.max_window = std::max(c.frames.max_window, c.frames.window);
    c.frames.validate();
    c.recon.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(context + ": " + e.what());
  } catch (const YAML::Exception& e) {
    throw ConfigError(context + ": " + e.what());
  }
  return c;
}

bool is_session_config(const YAML::Node& root) {
  if (!root.IsDefined() || !root.IsMap()) return false;
  bool any = false;
  for (const auto& kv : root) {
    const auto key = kv.first.as<std::string>();
    if (key != "frames" && key != "recon") return false;
    any = true;
  }
  return any;
}

void RunConfig::validate() const {
  stream.validate();
  frames.validate();
  sinks.validate();
  if (wants_phase() && !recon.keep_phase) {
    ReconParams r = recon;
    r.keep_phase = true;
    r.validate();
  }
  recon.validate();
  if (stream.curve_key.empty() != stream.curve_clients.empty())
    throw ConfigError(
        "stream.curve_key and stream.curve_clients go together (the receiver's key pair and the "
        "public keys it admits; radstream keygen makes key pairs)");
  // Anyone who can reach a non-local endpoint could inject spokes or read the images: not without CURVE, or
  // an explicit --insecure. Every endpoint goes through the one parser, which refuses what it cannot
  // classify.
  const bool curve = !stream.curve_key.empty();
  check_endpoint_exposure("stream.endpoint", stream.endpoint, stream.bind, curve, stream.insecure,
                          "inject spokes");
  check_endpoint_exposure("sinks.publish", sinks.publish, true, curve, stream.insecure, "read the images");
  mrd.validate(stream.insecure);
  if (!mrd.listen.empty() && stream.socket != ReceiveSocket::Pull)
    throw ConfigError("--mrd-listen feeds the ingest like a sender: it needs stream.socket pull (not sub)");
}

}  // namespace radstream
