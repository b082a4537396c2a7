// radstream recon: offline reconstruction, the interface other tools script. The stage chain's methods go
// through run_offline_recon, the exact path's (fhd, cg-exact) through run_exact_job.
#include <algorithm>

#include "app/commands.hpp"
#include "app/recon_options.hpp"
#include "core/error.hpp"
#include "core/key_names.hpp"
#include "recon/exact_job.hpp"
#include "recon/methods.hpp"
#include "recon/nlinv_job.hpp"
#include "recon/offline_recon.hpp"
#include "recon/offline_volume.hpp"

namespace radstream::app {

namespace {

// A recon option given on the command line that the method does not read (by its declaration,
// recon/methods.hpp) is a mistake: the error names the methods that read it. The top-level keys apply to all.
void check_method_keys(const DeclaredOptions& o, const MethodSpec& m) {
  const auto mine = m.key_names();
  for (const std::string& key : o.given_keys("recon")) {
    if (key == "method" || key == "backend" || key == "threads" || key == "cuda_graph") continue;
    if (std::find(mine.begin(), mine.end(), key) != mine.end()) continue;
    std::string readers;
    for (const MethodSpec& other : builtin_methods().all()) {
      const auto theirs = other.key_names();
      if (std::find(theirs.begin(), theirs.end(), key) != theirs.end())
        readers += (readers.empty() ? "" : ", ") + other.name;
    }
    throw ConfigError(o.option_of("recon", key) + " does not apply to --method " + m.name +
                      (readers.empty() ? std::string() : " (it goes with --method " + readers + ")"));
  }
}

int run_nlinv(const DeclaredOptions& o, const OfflineRecon& io, const ExactJob& exact,
              const ReconParams& params) {
  for (const std::string& flag : exact.given_flags())
    throw ConfigError(flag + " goes with --method fhd or cg-exact");
  check_method_keys(o, builtin_methods().at(params.method));
  // One window of an MRD file, or each partition of a stack of stars, through the chain's nlinv stage.
  if (!io.input.empty() || io.partitions != -1 || is_stack_of_stars(io)) {
    if (!io.sens_out.empty()) throw ConfigError("--sens-out is written by --method nlinv on --traj/--kspace");
    run_offline_recon(io, params);
    return 0;
  }
  run_nlinv_job(NlinvJob{io.traj, io.kspace, io.out, io.sens_out, io.matrix}, params);
  return 0;
}

}  // namespace

Runner add_recon(CLI::App& app) {
  auto o = std::make_shared<DeclaredOptions>();
  o->add(app, "io", OfflineRecon{}, {{}, {}, {"out"}});
  o->add(app, "exact", ExactJob{});
  app.footer(
      "Exact methods (the seeds' brute-force path, offline only): --method fhd writes F^H d (coils combined "
      "by RSS); --method cg-exact runs CG on (F^H F + lambda C^T C) x = F^H d with C first differences "
      "(--iterations, default 8; --lambda relative to F^H F's diagonal M, default 0.01).");
  add_recon_options(app, *o);
  return [o] {
    OfflineRecon io;
    ExactJob exact;
    o->apply("io", io);
    o->apply("exact", exact);
    ReconParams params = resolve_recon(*o, true);
    // A one-off reconstruction plans its FFTs with FFTW's estimate planner: measure spends seconds (21 s for
    // CG-SENSE at 256^2) to save microseconds per transform, which pays only over a stream's frames. An
    // explicit --fftw-planner, or a config file, keeps its choice.
    if (!o->given("recon", "fftw_planner") && !o->given("file", "config"))
      params.fft.planner = FftPlanner::Estimate;
    const MethodSpec& m = builtin_methods().at(params.method);
    if (m.route == OfflineRoute::Nlinv) return run_nlinv(*o, io, exact, params);
    if (m.route == OfflineRoute::Chain) {
      for (const std::string& flag : exact.given_flags())
        throw ConfigError(flag + " goes with --method fhd or cg-exact");
      check_method_keys(*o, m);
      run_offline_recon(io, params);
      return 0;
    }
    const std::string method = to_string(params.method);
    for (const std::string& key : o->given_keys("recon"))
      if (key != "method" && key != "backend" && key != "iterations" && key != "lambda")
        throw ConfigError(o->option_of("recon", key) + " does not apply to --method " + method +
                          " (it takes --backend, --iterations, --lambda)");
    if (!io.input.empty())
      throw ConfigError("--method " + method + " reads --impatient DIR or --traj/--kspace, not --input");
    exact.traj = io.traj;
    exact.kspace = io.kspace;
    exact.out = io.out;
    exact.matrix = io.matrix;
    exact.iterations_given = o->value("recon", "iterations").has_value();
    run_exact_job(exact, params);
    return 0;
  };
}

}  // namespace radstream::app
