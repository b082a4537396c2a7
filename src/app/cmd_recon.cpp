// radstream recon: offline reconstruction, the interface other tools script.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <vector>

#include "app/commands.hpp"
#include "exact/exact_inputs.hpp"
#include "app/recon_options.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_check.hpp"
#include "io/mrd_file.hpp"
#include "recon/backend.hpp"
#include "recon/recon_chain.hpp"
#include "exact/dense_exact.hpp"
#include "exact/exact_recon.hpp"
#include "exact/exact_slices.hpp"
#include "gpu/cuda_runtime.hpp"
#include <fstream>
#include <nlohmann/json.hpp>

namespace radstream::app {
namespace {

struct ReconArgs {
  std::string traj, kspace, input, out;
  std::string impatient, fieldmap, gradients, times, report, regions;
  int dims = 2, gpus = 0;
  bool fast_math = false, ignore_gradients = false;
  long long matrix_limit_mb = -1;  // -1: not given (ExactReconOptions' default)
  int matrix = 0;
  long start = 0, count = -1;
  int repeat = 1;
  ReconOptions recon;
};

bool is_exact_method(const std::string& m) { return m == "fhd" || m == "cg-exact"; }

double number_option(const ReconArgs& a, const std::string& key, double fallback) {
  const auto it = a.recon.given.find(key);
  if (it == a.recon.given.end()) return fallback;
  try {
    std::size_t used = 0;
    const double v = std::stod(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError("--" + key + " " + it->second + " is not a number");
}

// --regions R.cfl: one label per voxel (the real part, a whole number), the anatomical prior's regions.
std::vector<int> read_regions(const std::string& path, std::size_t voxels) {
  const CflArray r = read_cfl(path);
  if (r.data.size() != voxels)
    throw InputError(fmt::format("--regions {}: {} labels, the image has {} voxels", path, r.data.size(), voxels));
  std::vector<int> labels(voxels);
  for (std::size_t v = 0; v < voxels; ++v) {
    const float x = r.data[v].real();
    if (!std::isfinite(x) || x != std::floor(x) || std::fabs(x) > 2e9f)
      throw InputError(fmt::format("--regions {}: label {} of voxel {} is not a whole number", path, x, v));
    labels[v] = int(x);
  }
  return labels;
}

// --method fhd | cg-exact: the seeds' exact path (exact/exact_recon.hpp).
int run_exact(const ReconArgs& a) {
  const std::string method = a.recon.given.at("method");
  for (const auto& [key, value] : a.recon.given)
    if (key != "method" && key != "backend" && key != "iterations" && key != "lambda")
      throw ConfigError("--" + a.recon.option_of.at(key) + " does not apply to --method " + method +
                        " (it takes --backend, --iterations, --lambda)");
  if (!a.input.empty()) throw ConfigError("--method " + method + " reads --impatient DIR or --traj/--kspace, not --input");
  if (a.impatient.empty() == (a.traj.empty() && a.kspace.empty()))
    throw ConfigError("--method " + method + ": give either --impatient DIR or both --traj T.cfl and --kspace K.cfl");
  check_image_output(a.out);
  ExactReconOptions o;
  o.method = method == "fhd" ? ExactMethod::Fhd : ExactMethod::Cg;
  const double iterations = number_option(a, "iterations", 8);
  if (iterations < 1 || iterations > 100000 || iterations != std::floor(iterations))
    throw ConfigError(fmt::format("--iterations {} must be a whole number in 1..100000", iterations));
  o.iterations = int(iterations);
  o.lambda = number_option(a, "lambda", 1e-2);
  o.fast_math = a.fast_math;
  if (a.matrix_limit_mb >= 0) {
    if (o.method != ExactMethod::Cg) throw ConfigError("--matrix-limit-mb goes with --method cg-exact");
    o.matrix_limit_mb = std::size_t(a.matrix_limit_mb);
  } else if (a.matrix_limit_mb != -1) {
    throw ConfigError(fmt::format("--matrix-limit-mb {} must be >= 0", a.matrix_limit_mb));
  }
  const auto backend = a.recon.given.count("backend") ? parse_backend(a.recon.given.at("backend")) : BackendChoice::Auto;
  const BackendDecision decision = resolve_backend(backend);
  o.gpu = decision.backend == Backend::Cuda;
  log::info("backend: {} ({})", to_string(decision.backend), decision.reason);
  ExactInputs in;
  if (!a.impatient.empty()) {
    if (!a.fieldmap.empty() || !a.gradients.empty() || !a.times.empty())
      throw ConfigError("--fieldmap/--gradients/--times go with --traj/--kspace; --impatient reads its own");
    in = load_impatient(a.impatient);
    if (a.ignore_gradients) in.model.g = {};
  } else {
    if (a.traj.empty() || a.kspace.empty()) throw ConfigError("--traj and --kspace go together");
    if (a.ignore_gradients) throw ConfigError("--ignore-gradients goes with --impatient (leave out --gradients instead)");
    in = load_cfl_exact({a.traj, a.kspace, a.fieldmap, a.gradients, a.times, a.matrix, a.dims});
  }
  const ExactModel& m = in.model;
  if (!a.regions.empty()) {
    if (o.method != ExactMethod::Cg) throw ConfigError("--regions goes with --method cg-exact");
    o.regions = read_regions(a.regions, m.voxels());
  }
  log::info("{}: {} samples x {} coil(s), {} x {} x {} voxels, field map {}, gradients {}", in.source, m.samples(),
            in.coils, m.grid.n[0], m.grid.n[1], m.grid.n[2], m.fm.empty() ? "no" : "yes",
            m.has_gradients() ? "yes" : "no");
  ExactReconResult r;
  if (in.slices > 1) {
    // Independent 2D slices, spread over the GPUs (seed 001's multi-GPU), written as one [N N slices] stack.
    const std::size_t block = std::size_t(in.coils) * m.samples();
    std::vector<std::vector<cfloat>> data(std::size_t(in.slices));
    std::vector<ExactSlice> slices;
    for (int z = 0; z < in.slices; ++z) {
      data[z].assign(in.kdata.begin() + std::ptrdiff_t(z * block), in.kdata.begin() + std::ptrdiff_t((z + 1) * block));
      slices.push_back({&m, &data[z]});
    }
    const ExactSlicesResult sr = exact_reconstruct_slices(slices, in.coils, o, a.gpus);
    std::vector<cfloat> stack;
    int devices = 0;
    for (std::size_t z = 0; z < sr.slices.size(); ++z) {
      stack.insert(stack.end(), sr.slices[z].image.begin(), sr.slices[z].image.end());
      devices = std::max(devices, sr.device_of[z] + 1);
    }
    log::info("{}: {} slices in {:.1f} ms on {}", method, in.slices, sr.wall_ms,
              o.gpu ? std::to_string(devices) + " GPU(s)" : std::string("the CPU"));
    r = sr.slices.back();
    r.image = std::move(stack);
    r.total_ms = sr.wall_ms;
    ExactGrid stacked = m.grid;
    stacked.n[0] = in.slices;
    write_exact_image(a.out, r.image, stacked);
  } else {
    if (a.gpus > 1) log::warn("--gpus {}: one image, one GPU (slices are what spreads over GPUs)", a.gpus);
    r = exact_reconstruct(m, in.kdata, in.coils, o);
    write_exact_image(a.out, r.image, m.grid);
  }
  if (r.matrix)
    log::info("{}: F and F^H from the stored matrix ({:.0f} MiB, computed in {:.2f} ms)", method,
              double(exact_matrix_bytes(m)) / (1 << 20), r.matrix_ms);
  log::info("{}: F^H d {:.2f} ms, Q {:.2f} ms, CG {:.2f} ms ({} iterations, residual {:.3g}), total {:.2f} ms", method,
            r.fhd_ms, r.q_ms, r.cg_ms, r.iterations, r.residual, r.total_ms);
  log::info("wrote {}", a.out);
  if (!a.report.empty()) {
    nlohmann::ordered_json j;
    j["method"] = method;
    j["backend"] = to_string(decision.backend);
    j["fast_math"] = o.fast_math;
    j["samples"] = m.samples();
    j["slices"] = in.slices;
    j["coils"] = in.coils;
    j["grid"] = {m.grid.n[0], m.grid.n[1], m.grid.n[2]};
    j["field_map"] = !m.fm.empty();
    j["gradients"] = m.has_gradients();
    j["iterations"] = r.iterations;
    j["lambda"] = o.lambda;
    j["residual"] = r.residual;
    j["stored_matrix"] = r.matrix;
    j["ms"] = {{"matrix", r.matrix_ms}, {"fhd", r.fhd_ms}, {"q", r.q_ms}, {"cg", r.cg_ms}, {"total", r.total_ms}};
    std::ofstream f(a.report);
    f << j.dump(2) << "\n";
    if (!f) throw IoError("cannot write the report " + a.report);
  }
  return 0;
}

int run_recon(const ReconArgs& a) {
  const auto method = a.recon.given.find("method");
  if (method != a.recon.given.end() && is_exact_method(method->second)) return run_exact(a);
  for (const auto& [flag, given] : {std::pair<const char*, bool>{"--impatient", !a.impatient.empty()},
                                    {"--fieldmap", !a.fieldmap.empty()}, {"--gradients", !a.gradients.empty()},
                                    {"--times", !a.times.empty()}, {"--fast-math", a.fast_math},
                                    {"--report", !a.report.empty()}, {"--ignore-gradients", a.ignore_gradients},
                                    {"--matrix-limit-mb", a.matrix_limit_mb != -1}, {"--regions", !a.regions.empty()},
                                    {"--gpus", a.gpus != 0}})
    if (given) throw ConfigError(std::string(flag) + " goes with --method fhd or cg-exact");
  if (a.input.empty() == (a.traj.empty() && a.kspace.empty()))
    throw ConfigError("give either --input FILE.h5 or both --traj T.cfl and --kspace K.cfl");
  if (a.input.empty() && (a.traj.empty() || a.kspace.empty()))
    throw ConfigError("--traj and --kspace go together");
  if (a.repeat < 1) throw ConfigError("--repeat " + std::to_string(a.repeat) + " must be >= 1");
  check_image_output(a.out);  // before any work: a bad extension or a missing folder is said at once
  const ReconParams params = a.recon.resolve();

  Frame frame;
  if (!a.input.empty()) {
    check_mrd_in_child(a.input, a.start, a.count);  // a file that crashes HDF5 is refused, not a crash here
    const MrdRecording rec = read_mrd(a.input, a.start, a.count);
    if (a.count > 0 && long(rec.spokes.size()) < a.count)
      log::warn("{}: --count {} from spoke {} asks for more than the file has; using the {} there are", a.input,
                a.count, a.start, rec.spokes.size());
    StreamHeader h = rec.header;
    if (a.matrix > 0) h.matrix = a.matrix;
    frame = frame_from_spokes(h, rec.spokes);
    log::info("{}: {} spokes from spoke {}", a.input, rec.spokes.size(), a.start);
  } else {
    if (a.matrix <= 0) throw ConfigError("--matrix N is required with --traj/--kspace");
    const CflArray t = read_cfl(a.traj), k = read_cfl(a.kspace);
    frame = frame_from_bart(t, k, a.matrix, a.traj + " + " + a.kspace);
  }
  const Geometry& g = frame.geometry;

  const BackendDecision backend = resolve_backend(params.backend);
  log::info("backend: {} ({})", to_string(backend.backend), backend.reason);
  const Registry registry = default_registry();
  ReconChain chain(params, backend.backend, registry);
  const auto t0 = std::chrono::steady_clock::now();
  chain.configure(g);
  const double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  log::info("configured for {} (dcf {}, W {}, sigma {}, planning {:.1f} ms)", g.str(),
            to_string(params.density.method), params.gridding.width, params.gridding.oversampling, plan_ms);


  chain.fix_coil_maps(frame);  // the file, or an estimate from these data, when the recipe reads coil maps

  std::vector<double> times;
  View<const cfloat> image;
  for (int r = 0; r < a.repeat; ++r) {
    const auto s = std::chrono::steady_clock::now();
    image = chain.reconstruct(frame);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count());
  }
  std::sort(times.begin(), times.end());
  std::string stages;
  for (const auto& t : chain.timings()) stages += fmt::format(" {} {:.2f}", t.stage, t.ms);
  log::info(
      "reconstruction: median {:.2f} ms over {} run(s) (min {:.2f}, max {:.2f}); last run by stage (ms):{}",
      times[times.size() / 2], times.size(), times.front(), times.back(), stages);
  const SolverStats solver = chain.solver_stats();
  if (solver.present)
    log::info("cg-sense: {} iterations, relative residual {:.3g}", solver.iterations, solver.residual);
  write_image(a.out, image.span(), g.matrix);
  log::info("wrote {}", a.out);
  return 0;
}

}  // namespace

Runner add_recon(CLI::App& app) {
  auto a = std::make_shared<ReconArgs>();
  app.add_option("--traj", a->traj, "BART trajectory [3 samples spokes] in BART units (+-N/2)");
  app.add_option("--kspace", a->kspace, "BART k-space [1 samples spokes coils]");
  app.add_option("--input", a->input, "MRD .h5 file (instead of --traj/--kspace)");
  app.add_option("--matrix", a->matrix, "image matrix N (required with --traj; overrides the MRD header)");
  app.add_option("--start", a->start, "first spoke of an MRD file (default 0)");
  app.add_option("--count", a->count, "number of spokes of an MRD file (default all)");
  app.add_option("--out", a->out, "output .cfl ([N N] complex, combined magnitude) or .png (8-bit grey)")
      ->required();
  app.add_option("--repeat", a->repeat, "reconstruct this many times and report the median time (default 1)");
  app.add_option("--impatient", a->impatient,
                 "--method fhd|cg-exact: an IMPATIENT data folder (seed 001's format) instead of --traj/--kspace");
  app.add_option("--dims", a->dims, "--method fhd|cg-exact with --traj: 2 or 3 (default 2)");
  app.add_option("--fieldmap", a->fieldmap, "--method fhd|cg-exact: off-resonance map [N N (N)] in Hz (.cfl)");
  app.add_option("--gradients", a->gradients,
                 "--method fhd|cg-exact: susceptibility gradients [N N (N) 3] in Hz across a voxel (.cfl)");
  app.add_option("--times", a->times, "--method fhd|cg-exact: time of every sample in s (.cfl), with a field");
  app.add_flag("--fast-math", a->fast_math, "--method fhd|cg-exact on cuda: hardware sin/cos (faster, ~1e-6 less exact)");
  app.add_option("--report", a->report, "--method fhd|cg-exact: write timings and settings as JSON");
  app.add_option("--gpus", a->gpus, "--method fhd|cg-exact on cuda, k-space with slices: GPUs to spread them over (0: all)");
  app.add_option("--matrix-limit-mb", a->matrix_limit_mb,
                 "--method cg-exact with a field: keep F as a stored matrix (computed once, then each CG iteration is "
                 "one pass over it) when it takes at most this many MiB (default 1024; 0: every term recomputed)");
  app.add_option("--regions", a->regions,
                 "--method cg-exact: an anatomical prior, one region label per voxel (.cfl, whole numbers, the image's "
                 "layout): C leaves out the differences between voxels of different regions (seed 000)");
  app.add_flag("--ignore-gradients", a->ignore_gradients,
               "--method fhd|cg-exact with --impatient: leave the susceptibility gradients out of the model");
  app.footer(
      "Exact methods (the seeds' brute-force path, offline only): --method fhd writes F^H d (coils combined by "
      "RSS); --method cg-exact runs CG on (F^H F + lambda C^T C) x = F^H d with C first differences (--iterations, "
      "default 8; --lambda relative to F^H F's diagonal M, default 0.01).");
  a->recon.add_to(app);
  return [a] { return run_recon(*a); };
}

}  // namespace radstream::app
