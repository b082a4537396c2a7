// radstream bench-split's runner: M3, the coil split of one CG-SENSE frame (noncart/coil_split_sense.hpp)
// over 1, 2, 4 ... GPUs of this host (NCCL; through host memory where partitions share a GPU) or host
// partitions. The frame is a bench case's (default R8:
// 256 spokes x 512 x 32 coils -> 256^2, 10 iterations), its data already resident (uploaded once, untimed,
// as the live path's device ring has them); each timed solve is what the live stage does per frame: the PSF
// kernel from the trajectory, b = E^H y and the iterations, with the final wait. Reports the median and p99
// per configuration, the speed-up over the first, and each image's error against the first's.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/bench_case.hpp"
#include "bench/bench_cg.hpp"
#include "bench/bench_report.hpp"
#include "bench/bench_run.hpp"
#include "bench/bench_split_run.hpp"
#include "bench/bench_stages.hpp"
#include "core/error.hpp"
#include "core/gpu_list.hpp"
#include "core/log.hpp"
#include "core/param_reader.hpp"
#include "gpu/cuda_runtime.hpp"
#include "io/frame_io.hpp"
#include "io/output_path.hpp"
#include "noncart/coil_split_sense.hpp"
#include "sim/simulator.hpp"
#include "version.hpp"

namespace radstream::app {
namespace {

std::vector<int> whole_numbers(const std::vector<std::string>& v, const char* option) {
  std::vector<int> out;
  for (const auto& x : v) {
    std::size_t used = 0;
    int n = -1;
    try {
      n = std::stoi(x, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != x.size() || n < 0)
      throw ConfigError(std::string(option) + " " + x + " is not a whole number >= 0");
    out.push_back(n);
  }
  return out;
}

// The options with their lists as numbers (each named when it is not one).
struct SplitArgs : SplitOptions {
  std::vector<int> part_counts;  // the first is the reference
  std::vector<int> gpu_list;     // empty: 0..max(parts)-1
  explicit SplitArgs(const SplitOptions& o)
      : SplitOptions(o),
        part_counts(whole_numbers(o.parts, "--parts")),
        gpu_list(parse_gpu_list(o.gpus, "--gpus", true)) {}
};

double rel_error(const std::vector<cfloat>& a, const std::vector<cfloat>& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += std::norm(std::complex<double>(a[i]) - std::complex<double>(b[i]));
    den += std::norm(std::complex<double>(b[i]));
  }
  return den > 0 ? std::sqrt(num / den) : 0.0;
}

}  // namespace

int run_bench_split(const SplitOptions& options) {
  const SplitArgs a(options);
  if (!a.out.empty()) check_output_file(a.out, "--out", true);
  if (a.backend != "cuda" && a.backend != "cpu")
    throw ConfigError("--backend " + a.backend + ": cuda or cpu");
  if (a.frames < 1 || a.warmup < 0) throw ConfigError("--frames must be >= 1 and --warmup >= 0");
  const YAML::Node root = YAML::LoadFile(
      a.case_file == "config/bench/R8.yaml" ? find_cases_dir("config/bench") + "/R8.yaml" : a.case_file);
  BenchCase c;
  ParamReader reader(root["bench"], "bench");
  c.visit(reader);
  reader.finish();
  const ReconParams rp = ReconParams::from_config(root["recon"]);
  const bool cuda = a.backend == "cuda";
  const auto info = gpu::query();
  const int need = *std::max_element(a.part_counts.begin(), a.part_counts.end());
  std::vector<int> gpus = a.gpu_list;
  if (gpus.empty())
    for (int i = 0; i < need; ++i) gpus.push_back(i);
  if (cuda) {
    if (!info.available) throw ConfigError("bench-split --backend cuda: no GPU (" + info.reason + ")");
    if (int(gpus.size()) < need)
      throw ConfigError(fmt::format("bench-split: --parts up to {} needs {} entries in --gpus; it has {}",
                                    need, need, gpus.size()));
    for (int g : gpus)
      if (g < 0 || g >= info.device_count)
        throw ConfigError(
            fmt::format("bench-split: --gpus {}: this host has GPUs 0..{}", g, info.device_count - 1));
  }
  const Frame f = bench_frame(c.matrix, c.samples, c.coils, c.spokes);
  const HostBuffer<cfloat> maps = bench_maps(f);
  const int N = c.matrix;
  const std::size_t points = std::size_t(c.spokes) * c.samples, pixels = std::size_t(N) * N;
  CoilSplitOptions o;
  o.iterations = rp.cg.iterations;
  o.lambda = rp.cg.lambda;
  o.toeplitz = rp.cg.toeplitz;
  log::info("bench-split {}: {} spokes x {} x {} coils -> {}^2, {} iterations, {} partitions {} on {}",
            c.name, c.spokes, c.samples, c.coils, N, o.iterations, a.part_counts.size(),
            fmt::join(a.part_counts, "/"), a.backend);

  nlohmann::ordered_json js;
  js["radstream_version"] = RADSTREAM_VERSION;
  js["commit"] = RADSTREAM_COMMIT;
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  js["date"] = date;
  js["gpu"] = info.available ? info.device_name : "none";
  js["gpu_count"] = info.device_count;
  js["case"] = c.name;
  js["what"] = "coil-split CG-SENSE frame: PSF + E^H y + " + std::to_string(o.iterations) +
               " Toeplitz CG iterations, data resident, one allreduce per application";
  js["backend"] = a.backend;
  js["frames"] = a.frames;
  js["warmup"] = a.warmup;
  js["runs"] = nlohmann::ordered_json::array();
  std::vector<cfloat> reference;
  double base_ms = 0;
  for (int parts : a.part_counts) {
    std::unique_ptr<CoilSplitSense> s =
        cuda ? make_coil_split_sense_cuda(N, c.coils, points, rp.gridding.kernel(), o,
                                          std::vector<int>(gpus.begin(), gpus.begin() + parts))
             : make_coil_split_sense_cpu(N, c.coils, points, rp.gridding.kernel(), o, parts);
    s->set_frame(f.traj.data(), f.data.data(), maps.data());
    std::vector<double> ms;
    CgReport r;
    std::vector<cfloat> first_img(pixels), img(pixels);
    for (int i = 0; i < a.warmup + a.frames; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      r = s->solve();
      const double t =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (i >= a.warmup) ms.push_back(t);
      if (i == 0) s->image(first_img.data());
    }
    s->image(img.data());
    // The same solve repeated: 0 since the split's gridding and coil sums are deterministic (the floor any
    // comparison between configurations sits on).
    const double self = rel_error(img, first_img);
    const Stats st = stats(ms);
    if (reference.empty()) {
      reference = img;
      base_ms = st.median;
    }
    const double err = rel_error(img, reference), speedup = st.median > 0 ? base_ms / st.median : 0.0;
    log::info(
        "  {} partition(s), {} sums: median {:.3f} ms, p99 {:.3f} ms, speed-up {:.2f}x, error vs the first "
        "{:.3g}, residual {:.3g}; the same configuration run to run {:.3g}",
        parts, s->reduce_kind(), st.median, st.p99, speedup, err, r.residual, self);
    js["runs"].push_back(
        {{"parts", parts},
         {"devices", cuda ? nlohmann::ordered_json(std::vector<int>(gpus.begin(), gpus.begin() + parts))
                          : nlohmann::ordered_json(nullptr)},
         {"reduce", s->reduce_kind()},
         {"frame_ms", json_stats(st)},
         {"speedup", speedup},
         {"error_vs_first", err},
         {"error_run_to_run", self},
         {"residual", r.residual}});
  }
  write_report(js.dump(2) + "\n", a.out);
  return 0;
}

}  // namespace radstream::app
