// radstream recon: offline reconstruction, the interface other tools script.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include <fstream>
#include <nlohmann/json.hpp>
#include "app/commands.hpp"
#include "app/recon_options.hpp"
#include "core/error.hpp"
#include "core/gpu_list.hpp"
#include "core/log.hpp"
#include "exact/dense_exact.hpp"
#include "exact/exact_inputs.hpp"
#include "exact/exact_recon.hpp"
#include "exact/exact_slices.hpp"
#include "gpu/cuda_runtime.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_check.hpp"
#include "io/mrd_file.hpp"
#include "recon/backend.hpp"
#include "recon/recon_chain.hpp"

namespace radstream::app {
namespace {

// The data and the output of one reconstruction (the method's settings are ReconParams').
struct ReconIo {
  std::string traj, kspace, input, out;
  int matrix = 0;
  long start = 0, count = -1;
  int repeat = 1;

  template <class V>
  void visit(V& v) {
    v.field("traj", traj, "BART trajectory [3 samples spokes] in BART units (+-N/2)");
    v.field("kspace", kspace, "BART k-space [1 samples spokes coils]");
    v.field("input", input, "MRD .h5 file (instead of --traj/--kspace)");
    v.field("matrix", matrix, 0, 1 << 14, "image matrix N (required with --traj; overrides the MRD header)");
    v.field("start", start, 0L, 1L << 40, "first spoke of an MRD file");
    v.field("count", count, -1L, 1L << 40, "number of spokes of an MRD file (-1: all)");
    v.field("out", out, "output .cfl ([N N] complex, combined magnitude) or .png (8-bit grey)");
    v.field("repeat", repeat, 1, 1 << 20, "reconstruct this many times and report the median time");
  }
};

// The exact path's own inputs and settings (--method fhd | cg-exact; iterations, lambda and backend are the
// recon keys of the same names).
struct ExactArgs {
  std::string impatient, fieldmap, gradients, times, report, regions;
  int dims = 2;
  std::string gpus;
  bool fast_math = false, ignore_gradients = false;
  long long matrix_limit_mb = -1;  // -1: not given (ExactReconOptions' default)

  template <class V>
  void visit(V& v) {
    v.field("impatient", impatient,
            "--method fhd|cg-exact: an IMPATIENT data folder (seed 001's format) instead of --traj/--kspace");
    v.field("dims", dims, 2, 3, "--method fhd|cg-exact with --traj: 2 or 3");
    v.field("fieldmap", fieldmap, "--method fhd|cg-exact: off-resonance map [N N (N)] in Hz (.cfl)");
    v.field("gradients", gradients,
            "--method fhd|cg-exact: susceptibility gradients [N N (N) 3] in Hz across a voxel (.cfl)");
    v.field("times", times, "--method fhd|cg-exact: time of every sample in s (.cfl), with a field");
    v.field("fast_math", fast_math,
            "--method fhd|cg-exact on cuda: hardware sin/cos (faster, ~1e-6 less exact)");
    v.field("report", report, "--method fhd|cg-exact: write timings and settings as JSON");
    v.field("gpus", gpus,
            "--method fhd|cg-exact on cuda, k-space with slices: GPUs to spread them over, e.g. 0,1 (empty: "
            "all)");
    v.field(
        "matrix_limit_mb", matrix_limit_mb, -(1LL << 40), 1LL << 40,
        "--method cg-exact with a field: keep F as a stored matrix (computed once, then each CG iteration is "
        "one pass over it) when it takes at most this many MiB (-1: 1024; 0: every term recomputed)");
    v.field("regions", regions,
            "--method cg-exact: an anatomical prior, one region label per voxel (.cfl, whole numbers, the "
            "image's "
            "layout): C leaves out the differences between voxels of different regions (seed 000)");
    v.field("ignore_gradients", ignore_gradients,
            "--method fhd|cg-exact with --impatient: leave the susceptibility gradients out of the model");
  }
};

struct ReconArgs : ReconIo, ExactArgs {
  const DeclaredOptions* options = nullptr;
  std::optional<std::string> given(const std::string& key) const { return options->value("recon", key); }
};

bool is_exact_method(const std::string& m) {
  return m == "fhd" || m == "cg-exact";
}

double number_option(const ReconArgs& a, const std::string& key, double fallback) {
  const auto given = a.given(key);
  if (!given) return fallback;
  try {
    std::size_t used = 0;
    const double v = std::stod(*given, &used);
    if (used == given->size()) return v;
  } catch (const std::exception&) {
  }
  throw ConfigError("--" + key + " " + *given + " is not a number");
}

// --regions R.cfl: one label per voxel (the real part, a whole number), the anatomical prior's regions.
std::vector<int> read_regions(const std::string& path, std::size_t voxels) {
  const CflArray r = read_cfl(path);
  if (r.data.size() != voxels)
    throw InputError(
        fmt::format("--regions {}: {} labels, the image has {} voxels", path, r.data.size(), voxels));
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
  const std::string method = *a.given("method");
  for (const std::string& key : a.options->given_keys("recon"))
    if (key != "method" && key != "backend" && key != "iterations" && key != "lambda")
      throw ConfigError(a.options->option_of("recon", key) + " does not apply to --method " + method +
                        " (it takes --backend, --iterations, --lambda)");
  if (!a.input.empty())
    throw ConfigError("--method " + method + " reads --impatient DIR or --traj/--kspace, not --input");
  if (a.impatient.empty() == (a.traj.empty() && a.kspace.empty()))
    throw ConfigError("--method " + method +
                      ": give either --impatient DIR or both --traj T.cfl and --kspace K.cfl");
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
  const auto backend = a.given("backend") ? parse_backend(*a.given("backend")) : BackendChoice::Auto;
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
    if (a.ignore_gradients)
      throw ConfigError("--ignore-gradients goes with --impatient (leave out --gradients instead)");
    in = load_cfl_exact({a.traj, a.kspace, a.fieldmap, a.gradients, a.times, a.matrix, a.dims});
  }
  const ExactModel& m = in.model;
  if (!a.regions.empty()) {
    if (o.method != ExactMethod::Cg) throw ConfigError("--regions goes with --method cg-exact");
    o.regions = read_regions(a.regions, m.voxels());
  }
  log::info("{}: {} samples x {} coil(s), {} x {} x {} voxels, field map {}, gradients {}", in.source,
            m.samples(), in.coils, m.grid.n[0], m.grid.n[1], m.grid.n[2], m.fm.empty() ? "no" : "yes",
            m.has_gradients() ? "yes" : "no");
  ExactReconResult r;
  if (in.slices > 1) {
    // Independent 2D slices, spread over the GPUs (seed 001's multi-GPU), written as one [N N slices] stack.
    const std::size_t block = std::size_t(in.coils) * m.samples();
    std::vector<std::vector<cfloat>> data(std::size_t(in.slices));
    std::vector<ExactSlice> slices;
    for (int z = 0; z < in.slices; ++z) {
      data[z].assign(in.kdata.begin() + std::ptrdiff_t(z * block),
                     in.kdata.begin() + std::ptrdiff_t((z + 1) * block));
      slices.push_back({&m, &data[z]});
    }
    const ExactSlicesResult sr =
        exact_reconstruct_slices(slices, in.coils, o, parse_gpu_list(a.gpus, "--gpus"));
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
    if (parse_gpu_list(a.gpus, "--gpus").size() > 1)
      log::warn("--gpus {}: one image, one GPU (slices are what spreads over GPUs)", a.gpus);
    r = exact_reconstruct(m, in.kdata, in.coils, o);
    write_exact_image(a.out, r.image, m.grid);
  }
  if (r.matrix)
    log::info("{}: F and F^H from the stored matrix ({:.0f} MiB, computed in {:.2f} ms)", method,
              double(exact_matrix_bytes(m)) / (1 << 20), r.matrix_ms);
  log::info(
      "{}: F^H d {:.2f} ms, Q {:.2f} ms, CG {:.2f} ms ({} iterations, residual {:.3g}), total {:.2f} ms",
      method, r.fhd_ms, r.q_ms, r.cg_ms, r.iterations, r.residual, r.total_ms);
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
    j["ms"] = {
        {"matrix", r.matrix_ms}, {"fhd", r.fhd_ms}, {"q", r.q_ms}, {"cg", r.cg_ms}, {"total", r.total_ms}};
    std::ofstream f(a.report);
    f << j.dump(2) << "\n";
    if (!f) throw IoError("cannot write the report " + a.report);
  }
  return 0;
}

int run_recon(const ReconArgs& a) {
  const auto method = a.given("method");
  if (method && is_exact_method(*method)) return run_exact(a);
  for (const auto& [flag, given] : {std::pair<const char*, bool>{"--impatient", !a.impatient.empty()},
                                    {"--fieldmap", !a.fieldmap.empty()},
                                    {"--gradients", !a.gradients.empty()},
                                    {"--times", !a.times.empty()},
                                    {"--fast-math", a.fast_math},
                                    {"--report", !a.report.empty()},
                                    {"--ignore-gradients", a.ignore_gradients},
                                    {"--matrix-limit-mb", a.matrix_limit_mb != -1},
                                    {"--regions", !a.regions.empty()},
                                    {"--gpus", !a.gpus.empty()}})
    if (given) throw ConfigError(std::string(flag) + " goes with --method fhd or cg-exact");
  if (a.input.empty() == (a.traj.empty() && a.kspace.empty()))
    throw ConfigError("give either --input FILE.h5 or both --traj T.cfl and --kspace K.cfl");
  if (a.input.empty() && (a.traj.empty() || a.kspace.empty()))
    throw ConfigError("--traj and --kspace go together");
  if (a.repeat < 1) throw ConfigError("--repeat " + std::to_string(a.repeat) + " must be >= 1");
  check_image_output(a.out);  // before any work: a bad extension or a missing folder is said at once
  const ReconParams params = resolve_recon(*a.options);

  Frame frame;
  if (!a.input.empty()) {
    check_mrd_in_child(a.input, a.start, a.count);  // a file that crashes HDF5 is refused, not a crash here
    const MrdRecording rec = read_mrd(a.input, a.start, a.count);
    if (a.count > 0 && long(rec.spokes.size()) < a.count)
      log::warn("{}: --count {} from spoke {} asks for more than the file has; using the {} there are",
                a.input, a.count, a.start, rec.spokes.size());
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
  auto o = std::make_shared<DeclaredOptions>();
  o->add(app, "io", ReconIo{}, {{}, {}, {"out"}});
  o->add(app, "exact", ExactArgs{});
  app.footer(
      "Exact methods (the seeds' brute-force path, offline only): --method fhd writes F^H d (coils combined "
      "by "
      "RSS); --method cg-exact runs CG on (F^H F + lambda C^T C) x = F^H d with C first differences "
      "(--iterations, "
      "default 8; --lambda relative to F^H F's diagonal M, default 0.01).");
  add_recon_options(app, *o);
  return [o] {
    ReconArgs a;
    o->apply("io", static_cast<ReconIo&>(a));
    o->apply("exact", static_cast<ExactArgs&>(a));
    a.options = o.get();
    return run_recon(a);
  };
}

}  // namespace radstream::app
