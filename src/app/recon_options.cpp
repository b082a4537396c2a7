#include "app/recon_options.hpp"

#include <yaml-cpp/yaml.h>

#include "core/error.hpp"

namespace radstream::app {

void ReconOptions::add_to(CLI::App& app, bool config_option) {
  if (config_option)
    app.add_option("-c,--config", config, "YAML config file whose recon: section sets the defaults");
  app.add_option("--method", method, "gridding|fbp (default gridding)");
  app.add_option("--fbp-filter", fbp_filter, "FBP filter: ram-lak|shepp-logan|hann (default ram-lak)");
  app.add_option("--fbp-cutoff", fbp_cutoff, "FBP filter cut-off, fraction of Nyquist (default 1)");
  app.add_option("--dcf", dcf, "density compensation: ramp|ramp-dc|voronoi|none (default ramp-dc)");
  app.add_option("--width", width, "Kaiser-Bessel kernel width W in grid cells, even (default 4)");
  app.add_option("--oversampling", oversampling, "grid oversampling sigma (default 2)");
  app.add_option("--lut-resolution", lut, "kernel table entries per grid cell (default 1024)");
  app.add_option("--backend", backend, "auto|cpu|cuda (default auto: CUDA when a GPU is present)");
  app.add_option("--fft", fft, "FFT engine: auto|fftw|cufft|custom (default auto)");
  app.add_option("--fftw-planner", planner,
                 "FFTW planning effort: estimate|measure|patient (default measure)");
  app.add_option("--threads", threads, "CPU threads, 0 = all (default 0)");
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
  auto wrap = [](const char* opt, const std::string& value, auto&& f) {
    try {
      f();
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("--") + opt + " " + value + ": " + e.what());
    }
  };
  if (method) wrap("method", *method, [&] { p.method = parse_recon_method(*method); });
  if (fbp_filter) wrap("fbp-filter", *fbp_filter, [&] { p.fbp.filter = parse_fbp_filter(*fbp_filter); });
  if (fbp_cutoff) p.fbp.cutoff = *fbp_cutoff;
  if (dcf) wrap("dcf", *dcf, [&] { p.density.method = parse_dcf(*dcf); });
  if (backend) wrap("backend", *backend, [&] { p.backend = parse_backend(*backend); });
  if (fft) wrap("fft", *fft, [&] { p.fft.engine = parse_fft_engine(*fft); });
  if (planner) wrap("fftw-planner", *planner, [&] { p.fft.planner = parse_fft_planner(*planner); });
  if (width) p.gridding.width = *width;
  if (oversampling) p.gridding.oversampling = *oversampling;
  if (lut) p.gridding.lut_resolution = *lut;
  if (threads) p.threads = *threads;
}

}  // namespace radstream::app
