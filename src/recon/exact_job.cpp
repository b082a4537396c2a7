#include "recon/exact_job.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.hpp"
#include "core/gpu_list.hpp"
#include "core/log.hpp"
#include "exact/dense_exact.hpp"
#include "exact/exact_recon.hpp"
#include "exact/exact_slices.hpp"
#include "io/cfl.hpp"
#include "io/exact_inputs.hpp"
#include "io/frame_io.hpp"
#include "recon/backend.hpp"

namespace radstream {

std::vector<std::string> ExactJob::given_flags() const {
  std::vector<std::string> g;
  for (const auto& [flag, given] : {std::pair<const char*, bool>{"--impatient", !impatient.empty()},
                                    {"--fieldmap", !fieldmap.empty()},
                                    {"--gradients", !gradients.empty()},
                                    {"--times", !times.empty()},
                                    {"--fast-math", fast_math},
                                    {"--report", !report.empty()},
                                    {"--ignore-gradients", ignore_gradients},
                                    {"--matrix-limit-mb", matrix_limit_mb != -1},
                                    {"--regions", !regions.empty()},
                                    {"--gpus", !gpus.empty()},
                                    {"--dims", dims != 2}})
    if (given) g.push_back(flag);
  return g;
}

namespace {

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

}  // namespace

void run_exact_job(const ExactJob& a, const ReconParams& params) {
  const std::string method = to_string(params.method);
  if (a.impatient.empty() == (a.traj.empty() && a.kspace.empty()))
    throw ConfigError("--method " + method +
                      ": give either --impatient DIR or both --traj T.cfl and --kspace K.cfl");
  check_image_output(a.out);
  ExactReconOptions o;
  o.method = params.method == ReconMethod::Fhd ? ExactMethod::Fhd : ExactMethod::Cg;
  o.iterations = a.iterations_given ? params.cg.iterations : 8;  // the exact path's own default
  o.lambda = params.cg.lambda;
  o.fast_math = a.fast_math;
  if (a.matrix_limit_mb >= 0) {
    if (o.method != ExactMethod::Cg) throw ConfigError("--matrix-limit-mb goes with --method cg-exact");
    o.matrix_limit_mb = std::size_t(a.matrix_limit_mb);
  } else if (a.matrix_limit_mb != -1) {
    throw ConfigError(fmt::format("--matrix-limit-mb {} must be >= 0", a.matrix_limit_mb));
  }
  const BackendDecision decision = resolve_backend(params.backend);
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
}

}  // namespace radstream
