// radstream bench-exact's runner: the seeds' figures for the exact path (S1-S3 and the 3D accuracy table).
//   S1  F^H d of the 3D case: 128^3 voxels, M = 284,592 (2,156 radial spokes x 132), accurate and fast trig;
//   S2  seed 001's 64^2 spiral case (IMPATIENT data), 8 CG iterations with the gradient model, data resident;
//       with the GPU's NRMSE against the double-precision host twin;
//   S3  the whole 3D reconstruction: F^H d + Q + CG (60 iterations), without and with noise, scored like seed
//       000 (percent error, PSNR) beside a density-compensated direct adjoint (|k|^2 weights, scale fitted:
//       the "gridding" of the comparison without any interpolation error, so it flatters gridding).
#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>

#include "bench/bench_exact.hpp"
#include "bench/bench_report.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "exact/exact_recon.hpp"
#include "fft/fftw_plan.hpp"
#include "gpu/cuda_runtime.hpp"
#include "io/exact_inputs.hpp"
#include "recon/backend.hpp"
#include "sim/phantom3d.hpp"

namespace radstream::app {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

nlohmann::ordered_json stats(const std::vector<double>& v) {
  return {{"median_ms", median(v)},
          {"min_ms", *std::min_element(v.begin(), v.end())},
          {"max_ms", *std::max_element(v.begin(), v.end())},
          {"runs", v.size()}};
}

namespace {

ExactReconOptions cg_options(bool gpu, bool fast, int iterations, double lambda) {
  ExactReconOptions o;
  o.method = ExactMethod::Cg;
  o.gpu = gpu;
  o.fast_math = fast;
  o.iterations = iterations;
  o.lambda = lambda;
  return o;
}

// |image - ref| / |ref| with the sums in double.
double nrmse_against(const std::vector<cfloat>& image, const std::vector<std::complex<double>>& ref) {
  double num = 0, den = 0;
  for (std::size_t v = 0; v < ref.size(); ++v) {
    num += std::norm(std::complex<double>(image[v]) - ref[v]);
    den += std::norm(ref[v]);
  }
  return std::sqrt(num / den);
}

ExactModel model_of(const Phantom3dCase& c) {
  return exact_model_3d(c.k, c.n);
}

nlohmann::ordered_json bench_s1(const BenchExactArgs& a, bool gpu) {
  const Phantom3dCase c = phantom_3d_case(a.n, a.spokes, a.samples, 0.0);
  const ExactModel m = model_of(c);
  nlohmann::ordered_json j{{"what", "F^H d, 3D radial"}, {"voxels", m.voxels()}, {"samples", m.samples()}};
  for (bool fast : {false, true}) {
    if (fast && !gpu) continue;
    ExactReconOptions o;
    o.gpu = gpu;
    o.fast_math = fast;
    std::vector<double> t;
    for (int r = 0; r < a.repeat + 1; ++r) {
      const auto res = exact_reconstruct(m, c.data, 1, o);
      if (r > 0) t.push_back(res.fhd_ms);  // the first run warms the device up
    }
    j[fast ? "fast_trig" : "accurate"] = stats(t);
    log::info("S1 F^H d {}: median {:.1f} ms", fast ? "fast trig" : "accurate", median(t));
  }
  return j;
}

nlohmann::ordered_json bench_s2(const BenchExactArgs& a, bool gpu) {
  const ExactInputs in = load_impatient(a.impatient);
  nlohmann::ordered_json j{{"what", "seed 001 case, CG with the gradient model"},
                           {"data", a.impatient},
                           {"voxels", in.model.voxels()},
                           {"samples", in.model.samples()},
                           {"iterations", 8},
                           {"lambda", 1e-2}};
  const auto ref = exact_cg_reference(in.model, in.kdata.data(), 8, 1e-2);
  // The stored matrix (the default: 124 MB here) and every term recomputed per application (the seed's way).
  for (bool stored : {true, false})
    for (bool fast : {false, true}) {
      if (fast && !gpu) continue;
      ExactReconOptions o = cg_options(gpu, fast, 8, 1e-2);
      if (!stored) o.matrix_limit_mb = 0;
      std::vector<double> t;
      ExactReconResult last;
      for (int r = 0; r < a.repeat + 1; ++r) {
        last = exact_reconstruct(in.model, in.kdata, 1, o);
        if (r > 0) t.push_back(last.matrix_ms + last.fhd_ms + last.cg_ms);
      }
      const double nrmse = nrmse_against(last.image, ref);
      auto s = stats(t);
      s["matrix_ms_last"] = last.matrix_ms;
      s["fhd_ms_last"] = last.fhd_ms;
      s["cg_ms_last"] = last.cg_ms;
      s["nrmse_vs_double_twin"] = nrmse;
      const std::string key = std::string(fast ? "fast_trig" : "accurate") + (stored ? "" : "_on_the_fly");
      j[key] = s;
      log::info("S2 {}: median {:.3f} ms (matrix {:.3f}, F^H d {:.3f}, CG {:.3f}), NRMSE vs double {:.3g}",
                key, median(t), last.matrix_ms, last.fhd_ms, last.cg_ms, nrmse);
    }
  return j;
}

// The best any reconstruction from k inside the ball |k| <= 0.5 cycles per pixel can do against the
// rasterized truth: the truth low-passed to that ball (its error is the floor of the percent-error figure).
ImageScore band_limited_floor(const Phantom3dCase& c) {
  const int n = c.n;
  const std::size_t V = c.truth.size();
  HostBuffer<cfloat> buf(Extents{V});
  for (std::size_t v = 0; v < V; ++v) buf.data()[v] = c.truth[v];
  FftwPlan fwd({n, n, n}, 1, FftDirection::Forward, FftPlanner::Estimate, 0);
  FftwPlan inv({n, n, n}, 1, FftDirection::Inverse, FftPlanner::Estimate, 0);
  fwd.execute(buf.data());
  auto f = [&](int j) { return double(j < n / 2 ? j : j - n) / n; };
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        if (f(x) * f(x) + f(y) * f(y) + f(z) * f(z) > 0.25) buf.data()[(std::size_t(z) * n + y) * n + x] = 0;
  inv.execute(buf.data());
  std::vector<cfloat> low(V);
  for (std::size_t v = 0; v < V; ++v) low[v] = buf.data()[v] / float(V);
  return score_image(low, c.truth, false);
}

nlohmann::ordered_json bench_s3(const BenchExactArgs& a, bool gpu) {
  nlohmann::ordered_json j{{"what", "3D: F^H d + Q + CG, seed 000's scores"},
                           {"iterations", a.iterations},
                           {"noise_fraction", a.noise}};
  for (double noise : {0.0, a.noise}) {
    const Phantom3dCase c = phantom_3d_case(a.n, a.spokes, a.samples, noise, 7);
    const ExactModel m = model_of(c);
    // Density-compensated direct adjoint: weights |k|^2 (3D radial density falls as 1/|k|^2).
    std::vector<cfloat> dcf = c.data;
    for (std::size_t i = 0; i < dcf.size(); ++i)
      dcf[i] *= c.k[i][0] * c.k[i][0] + c.k[i][1] * c.k[i][1] + c.k[i][2] * c.k[i][2];
    ExactReconOptions o;
    o.gpu = gpu;
    const auto adj = exact_reconstruct(m, dcf, 1, o);
    const ImageScore sg = score_image(adj.image, c.truth, true);
    nlohmann::ordered_json row{
        {"dcf_adjoint", {{"percent_error", sg.percent_error}, {"psnr_db", sg.psnr_db}}}};
    if (noise == 0.0) {
      const ImageScore floor = band_limited_floor(c);
      j["band_limited_floor"] = {{"percent_error", floor.percent_error}, {"psnr_db", floor.psnr_db}};
      log::info("S3: the truth low-passed to |k| <= 0.5: error {:.1f} % (PSNR {:.1f} dB), the floor",
                floor.percent_error, floor.psnr_db);
    }
    o.method = ExactMethod::Cg;
    o.iterations = a.iterations;
    o.lambda = a.lambda;
    for (bool fast : {false, true}) {
      if (fast && !gpu) continue;
      o.fast_math = fast;
      std::vector<double> t;
      ExactReconResult r;
      for (int k = 0; k < std::max(1, a.repeat / 2) + (gpu ? 1 : 0); ++k) {
        r = exact_reconstruct(m, c.data, 1, o);
        if (!gpu || k > 0) t.push_back(r.fhd_ms + r.q_ms + r.cg_ms);
      }
      const ImageScore s = score_image(r.image, c.truth, false);
      auto st = stats(t);
      st["fhd_ms"] = r.fhd_ms;
      st["q_ms"] = r.q_ms;
      st["cg_ms"] = r.cg_ms;
      st["percent_error"] = s.percent_error;
      st["psnr_db"] = s.psnr_db;
      st["error_ratio_to_dcf_adjoint"] = s.percent_error / sg.percent_error;
      row[fast ? "cg_fast_trig" : "cg_accurate"] = st;
      log::info(
          "S3 noise {}: CG{} {:.1f} ms, error {:.1f} % (PSNR {:.1f} dB) vs DCF adjoint {:.1f} % ({:.1f} dB)",
          noise, fast ? " fast" : "", median(t), s.percent_error, s.psnr_db, sg.percent_error, sg.psnr_db);
    }
    // The same with the density weights in the fit (weighted least squares; converges in fewer iterations).
    o.fast_math = false;
    o.weights.resize(c.k.size());
    for (std::size_t i = 0; i < c.k.size(); ++i)
      o.weights[i] = c.k[i][0] * c.k[i][0] + c.k[i][1] * c.k[i][1] + c.k[i][2] * c.k[i][2];
    const auto rw = exact_reconstruct(m, c.data, 1, o);
    const ImageScore sw = score_image(rw.image, c.truth, false);
    row["cg_density_weighted"] = {{"ms", rw.fhd_ms + rw.q_ms + rw.cg_ms},
                                  {"percent_error", sw.percent_error},
                                  {"psnr_db", sw.psnr_db},
                                  {"error_ratio_to_dcf_adjoint", sw.percent_error / sg.percent_error}};
    log::info("S3 noise {}: density-weighted CG {:.1f} ms, error {:.1f} % (PSNR {:.1f} dB)", noise,
              rw.fhd_ms + rw.q_ms + rw.cg_ms, sw.percent_error, sw.psnr_db);
    o.weights.clear();
    // Seed 000's anatomically constrained reconstruction: C without the differences across the phantom's
    // ellipsoid boundaries (the anatomy a prior knows), lambda a.anatomical_lambda.
    o.regions = region_labels_3d(shepp_logan_3d(), a.n);
    o.lambda = a.anatomical_lambda;
    const auto ra = exact_reconstruct(m, c.data, 1, o);
    const ImageScore sa = score_image(ra.image, c.truth, false);
    row["cg_anatomical"] = {{"ms", ra.fhd_ms + ra.q_ms + ra.cg_ms},
                            {"lambda", o.lambda},
                            {"percent_error", sa.percent_error},
                            {"psnr_db", sa.psnr_db},
                            {"error_ratio_to_dcf_adjoint", sa.percent_error / sg.percent_error}};
    log::info(
        "S3 noise {}: CG with the anatomical prior (lambda {}) {:.1f} ms, error {:.1f} % (PSNR {:.1f} dB), "
        "ratio to the DCF adjoint {:.2f}",
        noise, o.lambda, ra.fhd_ms + ra.q_ms + ra.cg_ms, sa.percent_error, sa.psnr_db,
        sa.percent_error / sg.percent_error);
    o.regions.clear();
    o.lambda = a.lambda;
    row["lambda"] = o.lambda;
    j[noise > 0 ? "noisy" : "noiseless"] = row;
  }
  return j;
}

// Precision (seed 000's Figure 6: double, single, fast trig): a reduced 3D case (24^3, 78 spokes x 24, the
// 128^3 case's sampling ratio) reconstructed by 60 CG iterations in double on the host (direct F^H F) and in
// single / fast trig (GPU, Toeplitz); the PSNR of each against the truth.
nlohmann::ordered_json bench_precision(const BenchExactArgs& a, bool gpu) {
  const Phantom3dCase c = phantom_3d_case(24, 78, 24, 0.0);
  const ExactModel m = model_of(c);
  std::vector<cfloat> d(c.data.begin(), c.data.end());
  const auto t0 = std::chrono::steady_clock::now();
  const auto ref = exact_cg_reference(m, d.data(), a.iterations, a.lambda);
  const double ref_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::vector<cfloat> refc(ref.begin(), ref.end());
  const ImageScore sd = score_image(refc, c.truth, false);
  nlohmann::ordered_json j{
      {"what", "24^3, 78 x 24 radial samples, CG in double / single / fast trig"},
      {"iterations", a.iterations},
      {"lambda", a.lambda},
      {"double", {{"percent_error", sd.percent_error}, {"psnr_db", sd.psnr_db}, {"ms", ref_ms}}}};
  log::info("P double: error {:.2f} %, PSNR {:.3f} dB", sd.percent_error, sd.psnr_db);
  for (bool fast : {false, true}) {
    if (fast && !gpu) continue;
    const ExactReconOptions o = cg_options(gpu, fast, a.iterations, a.lambda);
    const auto r = exact_reconstruct(m, c.data, 1, o);
    const ImageScore s = score_image(r.image, c.truth, false);
    const double nrmse = nrmse_against(r.image, ref);
    j[fast ? "fast_trig" : "single"] = {{"percent_error", s.percent_error},
                                        {"psnr_db", s.psnr_db},
                                        {"psnr_minus_double_db", s.psnr_db - sd.psnr_db},
                                        {"nrmse_vs_double", nrmse}};
    log::info("P {}: error {:.2f} %, PSNR {:.3f} dB ({:+.4f} dB against double)",
              fast ? "fast trig" : "single", s.percent_error, s.psnr_db, s.psnr_db - sd.psnr_db);
  }
  return j;
}

}  // namespace

int run_bench_exact(const BenchExactArgs& a) {
  if (a.repeat < 1) throw ConfigError("--repeat " + std::to_string(a.repeat) + " must be >= 1");
  const BackendDecision b = resolve_backend(parse_backend(a.backend));
  const bool gpu = b.backend == Backend::Cuda;
  log::info("backend: {} ({})", to_string(b.backend), b.reason);
  nlohmann::ordered_json j;
  const auto avail = gpu::query();
  j["device"] = gpu ? avail.device_name : std::string("cpu");
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  j["date"] = date;
  j["case_size"] = {{"n", a.n}, {"spokes", a.spokes}, {"samples", a.samples}};
  for (const auto& c : a.cases) {
    if (c == "S1")
      j["S1"] = bench_s1(a, gpu);
    else if (c == "S2")
      j["S2"] = bench_s2(a, gpu);
    else if (c == "S3")
      j["S3"] = bench_s3(a, gpu);
    else if (c == "P")
      j["P"] = bench_precision(a, gpu);
    else if (c == "S4")
      j["S4"] = bench_s4(a, gpu);
    else if (c == "SL")
      j["SL"] = bench_slices(a, gpu);
    else
      throw ConfigError("--case " + c + " is not one of S1 S2 S3 S4 P SL");
  }
  write_report(j.dump(2) + "\n", a.out);
  return 0;
}

}  // namespace radstream::app
