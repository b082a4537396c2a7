// radstream bench's runner: named cases, each stage timed after a warm-up (CUDA events on the GPU, wall time
// on the CPU), median/p10/p90 over the frames, written as JSON with the device, the case and the ratios the
// targets name.
#include "bench/bench_run.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "bench/bench_baseline.hpp"
#include "bench/bench_case.hpp"
#include "bench/bench_cg.hpp"
#include "bench/bench_floor.hpp"
#include "bench/bench_nlinv.hpp"
#include "bench/bench_nufft.hpp"
#include "bench/bench_plot.hpp"
#include "bench/bench_report.hpp"
#include "bench/bench_stages.hpp"
#include "bench/bench_target.hpp"
#include "bench/driver_release.hpp"
#include "core/error.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "core/param_reader.hpp"
#include "gpu/cuda_runtime.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/output_path.hpp"
#include "noncart/kaiser_bessel.hpp"
#include "recon/recon_chain.hpp"
#include "sim/simulator.hpp"
#include "version.hpp"

namespace radstream::app {

std::string find_cases_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir != "config/bench" || fs::is_directory(dir)) return dir;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec).parent_path();
  if (!ec)
    for (const fs::path& p : {exe / ".." / "config" / "bench", exe / "config" / "bench",
                              exe / ".." / "share" / "radstream" / "config" / "bench"})
      if (fs::is_directory(p)) return fs::weakly_canonical(p).string();
  return dir;
}

namespace {

// One case per file of config/bench/*.yaml: a `bench:` section (the fields above) and an optional `recon:`.
std::vector<BenchCase> load_cases(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    throw ConfigError("bench: case folder '" + dir + "' does not exist (--cases-dir)");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<BenchCase> cases;
  for (const auto& f : files) {
    try {
      const YAML::Node root = YAML::LoadFile(f.string());
      BenchCase c;
      ParamReader reader(root["bench"], "bench");
      c.visit(reader);
      reader.finish();
      if (c.name.empty()) c.name = f.stem().string();
      if (c.kind == BenchKind::FftEngines && c.backend != Backend::Cuda)
        throw ConfigError("bench.kind fft-engines needs backend: cuda");
      c.recon = ReconParams::from_config(root["recon"]);
      if (!c.target.empty()) check_target_spec(c.target, c.name);
      cases.push_back(std::move(c));
    } catch (const YAML::Exception& e) {
      throw ConfigError(f.string() + ": " + e.what());
    } catch (const ConfigError& e) {
      throw ConfigError(f.string() + ": " + e.what());
    }
  }
  if (cases.empty()) throw ConfigError("bench: no .yaml cases in " + dir);
  return cases;
}

double time_command_s(const std::string& cmd) {
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = std::system(cmd.c_str());
  if (rc != 0) return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// BART on the same input as R4: `bart nufft -a` of the ramp-weighted data, then `bart rss`; median of 3 runs.
nlohmann::ordered_json bart_reference(const Frame& f, int matrix) {
  if (std::system("bart version > /dev/null 2>&1") != 0) return nullptr;
  const auto dir = std::filesystem::temp_directory_path() / "radstream_bench_bart";
  std::filesystem::create_directories(dir);
  write_bart_pair(dir.string(), f);  // BART units are those of `matrix`, the frame's own
  const std::string cd = "cd " + dir.string() + " && ";
  if (std::system((cd + "bart rss 1 t r >/dev/null && bart fmac k r kw >/dev/null").c_str()) != 0)
    return nullptr;
  std::vector<double> s;
  for (int i = 0; i < 3; ++i) {
    const double t = time_command_s(cd + fmt::format("bart nufft -a -d {}:{}:1 t kw img >/dev/null 2>&1 && "
                                                     "bart rss 8 img out >/dev/null 2>&1",
                                                     matrix, matrix));
    if (t < 0) return nullptr;
    s.push_back(t * 1000);
  }
  std::filesystem::remove_all(dir);
  return stats(s).median;
}

// R3: the FFT engines alone on the case's [coils][G][G] grids (both directions), and the chain tail from
// grid to combined image: cuFFT + deapodize + RSS as separate kernels, the custom FFT with the same
// kernels, and the fused custom tail.
nlohmann::ordered_json fft_engines_case(const BenchCase& c, const Registry& registry, int frames,
                                        int warmup) {
  ReconParams p = c.recon;
  const Geometry g{c.matrix, c.samples, c.spokes, c.coils, float(c.samples) / float(c.matrix)};
  const int G = oversampled_grid_size(c.matrix, p.gridding.oversampling);
  const Extents grids{std::size_t(c.coils), std::size_t(G), std::size_t(G)};
  auto run = [&](FftEngine e, GridRecipe which) {
    p.fft.engine = e;
    return time_cuda_recipe(grid_recipe(which), p, registry, g, grids, frames, warmup);
  };
  const Stats cufft_inv = run(FftEngine::Cufft, GridRecipe::InverseFft);
  const Stats custom_inv = run(FftEngine::Custom, GridRecipe::InverseFft);
  const Stats cufft_fwd = run(FftEngine::Cufft, GridRecipe::ForwardFft);
  const Stats custom_fwd = run(FftEngine::Custom, GridRecipe::ForwardFft);
  const Stats tail_cufft = run(FftEngine::Cufft, GridRecipe::Tail);
  const Stats tail_custom = run(FftEngine::Custom, GridRecipe::Tail);
  const Stats tail_fused = run(FftEngine::Custom, GridRecipe::FusedTail);
  log::info(
      "bench {}: inverse FFT of {} x {}^2: cuFFT {:.4f} ms, custom {:.4f} ms ({:.2f}x); tail: "
      "cuFFT+kernels {:.4f} ms, fused custom {:.4f} ms ({:.2f}x)",
      c.name, c.coils, G, cufft_inv.median, custom_inv.median, custom_inv.median / cufft_inv.median,
      tail_cufft.median, tail_fused.median, tail_fused.median / tail_cufft.median);
  return {{"case", c.name},
          {"what", c.what},
          {"backend", "cuda"},
          {"grids", fmt::format("{} x {}^2", c.coils, G)},
          {"inverse_ms", {{"cufft", json_stats(cufft_inv)}, {"custom", json_stats(custom_inv)}}},
          {"forward_ms", {{"cufft", json_stats(cufft_fwd)}, {"custom", json_stats(custom_fwd)}}},
          {"tail_ms",
           {{"cufft+deapodize+rss", json_stats(tail_cufft)},
            {"custom+deapodize+rss", json_stats(tail_custom)},
            {"custom_fused", json_stats(tail_fused)}}},
          {"custom_over_cufft_inverse", custom_inv.median / cufft_inv.median},
          {"custom_over_cufft_forward", custom_fwd.median / cufft_fwd.median},
          {"fused_over_cufft_tail", tail_fused.median / tail_cufft.median}};
}

// A whole reconstruction on the simulator's frame: every stage per frame, the frame, the wall time with
// transfers; on the GPU the batched-cuFFT yardstick, with CG the normal operator's floor; on the CPU BART.
nlohmann::ordered_json chain_case(const BenchCase& c, bool moved_to_cpu, const Registry& registry, int frames,
                                  int warmup, double copy_gb_per_s) {
  const Backend b = c.backend;
  Frame f = bench_frame(c.matrix, c.samples, c.coils, c.spokes);
  std::optional<Simulator> sim;  // a moving case's stream of spokes
  if (c.moving) sim.emplace(bench_simulation(c.matrix, c.samples, c.coils));
  ReconChain chain(c.recon, b, registry);
  chain.configure(f.geometry);
  HostBuffer<cfloat> maps;
  if (chain.needs_coil_maps()) {  // given, not timed: estimated once from the case's frame
    maps = bench_maps(f);
    chain.set_coil_maps(maps.view());
  }
  std::map<std::string, std::vector<double>> stage_ms;
  std::vector<double> wall, gpu_sum;
  std::vector<cfloat> last_image;
  for (int i = 0; i < warmup + frames; ++i) {
    if (sim && i > 0)
      f = frame_from_spokes(sim->header(), sim->spokes(std::uint64_t(i) * c.spokes, c.spokes));
    const auto t0 = std::chrono::steady_clock::now();
    const auto image = chain.reconstruct(f);
    if (i + 1 == warmup + frames && image.loc != Location::Device)
      last_image.assign(image.data, image.data + image.size());
    const double w = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (i < warmup) continue;
    wall.push_back(w);
    double sum = 0;
    for (const auto& t : chain.timings()) {
      stage_ms[t.stage].push_back(t.ms);
      sum += t.ms;
    }
    gpu_sum.push_back(sum);
  }
  // The FFT's share: every stage of the recipe whose key starts with "fft" (the fused tail included).
  std::vector<double> fft_ms(gpu_sum.size(), 0.0);
  for (const auto& [name, v] : stage_ms)
    if (name.rfind("fft", 0) == 0)
      for (std::size_t i = 0; i < v.size() && i < fft_ms.size(); ++i) fft_ms[i] += v[i];
  const Stats frame = stats(gpu_sum), fft = stats(fft_ms), w = stats(wall);
  nlohmann::ordered_json stages = nlohmann::ordered_json::object();
  for (const auto& t : chain.timings()) stages[t.stage] = json_stats(stats(stage_ms[t.stage]));
  nlohmann::ordered_json j = {{"case", c.name},
                              {"what", c.what},
                              {"backend", to_string(c.backend)},
                              {"recipe", chain.recipe().name},
                              {"stages_ms", stages},
                              {"frame_ms", json_stats(frame)},
                              {"wall_ms_with_transfers", json_stats(w)},
                              {"frames_per_s", 1000.0 / w.median},
                              {"fft_stage_ms", fft.median}};
  if (b == Backend::Cuda) {
    // The target's yardstick: one plain batched cuFFT of the same oversampled grids, in this run.
    ReconParams ref = c.recon;
    ref.fft.engine = FftEngine::Cufft;
    const int G = oversampled_grid_size(c.matrix, ref.gridding.oversampling);
    const Stats cu =
        time_cuda_recipe(grid_recipe(GridRecipe::InverseFft), ref, registry, f.geometry,
                         Extents{std::size_t(c.coils), std::size_t(G), std::size_t(G)}, frames, warmup);
    j["cufft_reference_ms"] = json_stats(cu);
    j["frame_over_cufft_reference"] = frame.median / cu.median;
    if (copy_gb_per_s > 0) {  // each memory-stream stage against its floor at this device's copy bandwidth
      j["copy_bandwidth_gb_per_s"] = copy_gb_per_s;
      j["stage_floors"] = stage_floors(j["stages_ms"], c, G, copy_gb_per_s);
    }
    j["cuda_graph"] = chain.uses_graph();
  }
  if (c.name == "R4") {
    j["bart_nufft_rss_command_ms"] = bart_reference(f, c.matrix);
    if (j["bart_nufft_rss_command_ms"].is_number())
      j["bart_over_ours_wall"] = j["bart_nufft_rss_command_ms"].get<double>() / w.median;
  }
  const SolverStats solver = chain.solver_stats();
  if (solver.present && c.recon.method == ReconMethod::Nlinv) {
    j["cg_iterations_last_frame"] = solver.iterations;  // over all Newton steps
    j["newton_steps"] = c.recon.nlinv.newton;
    j["grid_os"] = c.recon.nlinv.grid_os;
    if (b == Backend::Cuda) j["nlinv_times"] = nlinv_operator_times(f, c.recon.nlinv, frames, warmup);
    if (b == Backend::Cpu) {  // N3: BART's rtnlinv on the same frames, same machine
      const auto bart = bart_rtnlinv_reference(f, c.recon.nlinv, warmup + frames, last_image);
      j["bart_rtnlinv"] = bart;
      if (!bart.is_null()) j["ours_over_bart_wall"] = w.median / bart["ms_per_frame"].get<double>();
    }
  } else if (solver.present) {
    j["iterations"] = solver.iterations;
    j["residual"] = solver.residual;
    j["toeplitz"] = c.recon.cg.toeplitz;
    if (b == Backend::Cuda && c.recon.cg.toeplitz)
      j["normal_operator"] = normal_operator_floor(f, maps, c.recon, frames, warmup);
    if (b == Backend::Cpu) {
      const auto bart = bart_pics_reference(f, maps, solver.iterations, 0.01);
      j["bart_pics_command_ms"] = bart;
      if (!bart.is_null()) j["bart_over_ours_wall"] = bart.get<double>() / w.median;
      // BART's fixed cost (start, files, maps, scaling): the same command with one iteration.
      j["bart_pics_1_iteration_command_ms"] = bart_pics_reference(f, maps, 1, 0.01);
    }
  }
  if (moved_to_cpu && !c.target.empty())
    j["target_not_applied"] =
        "'" + c.target + "' is a GPU target; this run moved the case to the CPU (--backend cpu)";
  else if (!c.target.empty())
    j["target"] = evaluate_target(c.target, j);
  log::info("bench {}: frame {:.4f} ms (p10 {:.4f}, p90 {:.4f}), fft stage {:.4f} ms, wall {:.3f} ms", c.name,
            frame.median, frame.p10, frame.p90, fft.median, w.median);
  return j;
}

// One line per case on stderr: the number that matters for each kind, and the target's verdict.
int print_summary(const nlohmann::ordered_json& js) {
  std::fprintf(stderr, "%-22s %-8s %-7s %-6s %s\n", "case", "backend", "kind", "target", "result");
  int pass = 0, fail = 0, none = 0;
  for (const auto& c : js["cases"]) {
    const std::string kind = c.value("kind", "chain");
    std::string result;
    if (c.contains("frame_ms"))
      result = fmt::format("frame {:.4f} ms median, p99 {:.4f} ({:.1f} frames/s with transfers)",
                           c["frame_ms"]["median"].get<double>(), c["frame_ms"]["p99"].get<double>(),
                           c["frames_per_s"].get<double>());
    else if (kind == "live")
      result = fmt::format("arrival -> image p99 {:.3f} ms, {} frames, {} skipped",
                           c["latency_arrival_to_ready_ms"]["p99"].get<double>(), c["frames"].get<long>(),
                           c["frames_skipped"].get<long>());
    else if (kind == "mrd-live")
      result = fmt::format(
          "arrival -> image sent p99 {:.3f} ms (ZeroMQ {:.3f}, {:+.3f}), {} frames, {} images back",
          c["latency_arrival_to_sent_ms"]["p99"].get<double>(),
          c["zmq_latency_arrival_to_sent_ms"]["p99"].get<double>(),
          c["mrd_minus_zmq_sent_p99_ms"].get<double>(), c["frames"].get<long>(),
          c["images_back"].get<long>());
    else if (kind == "mrd-decode")
      result = fmt::format("{:.0f} acquisitions/s decoded ({:.2f} GB/s)",
                           c["acquisitions_per_s"].get<double>(), c["gb_per_s"].get<double>());
    else if (kind == "nufft")
      result =
          fmt::format("forward {:.4f} ms (error {:.1e}), adjoint {:.4f} ms (error {:.1e})",
                      c["forward_ms"]["median"].get<double>(), c["forward_relative_error"].get<double>(),
                      c["adjoint_ms"]["median"].get<double>(), c["adjoint_relative_error"].get<double>());
    else if (kind == "nufft-sweep") {
      for (const auto& b : c["fastest"])
        if (b["error_at_most"].get<double>() == 1e-4 && b.contains("points_per_s"))
          result +=
              fmt::format("{}{} {}: {:.3g} points/s at <= 1e-4", result.empty() ? "" : "; ",
                          b["geometry"].get<std::string>(), b["direction"].get<std::string>().substr(0, 3),
                          b["points_per_s"].get<double>());
    } else if (kind == "ingest")
      result =
          fmt::format("{:.0f} spokes/s, lost {}", c["spokes_per_s"].get<double>(), c["lost"].get<long>());
    else if (c.contains("custom_over_cufft_inverse"))
      result =
          fmt::format("custom/cuFFT inverse {:.2f}x, fused tail/cuFFT tail {:.2f}x",
                      c["custom_over_cufft_inverse"].get<double>(), c["fused_over_cufft_tail"].get<double>());
    std::string verdict = "-";
    if (c.contains("target")) {
      const bool ok = c["target"]["pass"].get<bool>();
      verdict = ok ? "PASS" : "FAIL";
      ++(ok ? pass : fail);
      if (!ok)
        for (const auto& k : c["target"]["checks"])
          if (!k["pass"].get<bool>())
            result += fmt::format(
                "  [{} {} {:g}: {}]", k["metric"].get<std::string>(), k["op"].get<std::string>(),
                k["limit"].get<double>(),
                k["value"].is_null() ? "not measured" : fmt::format("{:.4g}", k["value"].get<double>()));
    } else {
      ++none;
    }
    std::fprintf(stderr, "%-22s %-8s %-7s %-6s %s\n", c["case"].get<std::string>().c_str(),
                 c.value("backend", "").c_str(), kind.c_str(), verdict.c_str(), result.c_str());
  }
  for (const auto& s : js["skipped"])
    std::fprintf(stderr, "%-22s %-8s %-7s %-6s skipped: %s\n", s["case"].get<std::string>().c_str(), "", "",
                 "", s["reason"].get<std::string>().c_str());
  std::fprintf(stderr, "targets: %d pass, %d fail, %d cases without a target, %zu skipped\n", pass, fail,
               none, js["skipped"].size());
  return fail;
}

// The 1-minute load average (/proc/loadavg): other work on the machine skews a benchmark; the JSON says how
// much.
double load_average() {
  std::ifstream f("/proc/loadavg");
  double l = -1;
  f >> l;
  return l;
}

// The NVIDIA kernel driver's release (e.g. "580.159.04") from /proc/driver/nvidia/version; "none" without
// one (driver_release.hpp reads the line; the open module's line fooled the first reader into "for").
std::string nvidia_driver_release() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  if (!std::getline(f, line)) return "none";
  return driver_release_of(line);
}

// --baseline: the comparison in the JSON and, on stderr, each timing slower than the baseline by more than
// the tolerance.
void report_baseline(nlohmann::ordered_json& js, const BenchRun& a, const std::string& cases_dir) {
  std::vector<std::string> names;
  for (const auto& c : js["cases"]) names.push_back(c.value("case", std::string()));
  const std::string results =
      (std::filesystem::path(cases_dir) / ".." / ".." / "tests" / "bench" / "results").string();
  const std::string file = find_baseline(a.baseline, results, js.value("gpu", std::string("none")), names);
  if (file.empty()) {
    js["baseline"] = {{"not_compared", "no result of this GPU kind with these cases in " + results}};
    log::warn("bench: --baseline auto found no result of '{}' with these cases in {}", js.value("gpu", ""),
              results);
    return;
  }
  js["baseline"] = compare_with_baseline(js, file, a.tolerance);
  const auto& b = js["baseline"];
  if (b.contains("not_compared")) {
    log::warn("bench: baseline {} not compared: {}", file, b["not_compared"].get<std::string>());
    return;
  }
  std::fprintf(stderr,
               "baseline %s (%s, %s): %d timings compared, %zu slower by more than %.0f %%, %zu faster\n",
               file.c_str(), b["baseline_date"].get<std::string>().c_str(),
               b["baseline_commit"].get<std::string>().c_str(), b["compared"].get<int>(), b["slower"].size(),
               a.tolerance * 100, b["faster"].size());
  for (const auto& r : b["slower"])
    std::fprintf(stderr, "  SLOWER %-12s %-40s %.4g -> %.4g (x%.2f)\n", r["case"].get<std::string>().c_str(),
                 r["timing"].get<std::string>().c_str(), r["baseline"].get<double>(), r["now"].get<double>(),
                 r["ratio"].get<double>());
}

}  // namespace

// What is measured so far, written before each case (marked incomplete), so that an interrupted run keeps
// every case it finished.
void save_partial(nlohmann::ordered_json& js, const std::string& out) {
  if (out.empty() || js["cases"].empty()) return;
  js["complete"] = false;
  std::ofstream o(out);
  if (!(o << js.dump(1) << "\n")) throw IoError(out + ": cannot write");
}

int run_bench(const BenchRun& a) {
  if (!a.out.empty()) check_output_file(a.out, "--out", true);  // before minutes of cases, not after
  if (!a.baseline.empty() && a.baseline != "auto" && !std::filesystem::is_regular_file(a.baseline))
    throw ConfigError("--baseline '" + a.baseline + "': no such result file (or use --baseline auto)");
  const auto gpu_info = gpu::query();
  const bool have_gpu = gpu_info.available && gpu::cuda_stages_built();
  std::string cpu_name = "unknown";
  {
    std::ifstream ci("/proc/cpuinfo");
    std::string line;
    while (std::getline(ci, line))
      if (line.rfind("model name", 0) == 0) {
        cpu_name = line.substr(line.find(':') + 2);
        break;
      }
  }
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  nlohmann::ordered_json js;
  js["radstream_version"] = RADSTREAM_VERSION;
  js["commit"] = RADSTREAM_COMMIT;
  js["build_type"] = std::string(RADSTREAM_BUILD_TYPE).empty() ? "unset" : RADSTREAM_BUILD_TYPE;
  js["load_average_1min_before"] = load_average();
  js["date"] = date;
  js["gpu"] = have_gpu ? gpu_info.device_name : "none";
  js["driver_version"] = gpu_info.driver_version;    // the CUDA version the driver supports (13000: 13.0)
  js["runtime_version"] = gpu_info.runtime_version;  // the CUDA runtime this build runs on
  js["nvidia_driver"] = nvidia_driver_release();
  js["cpu"] = cpu_name;
  js["cpu_threads"] = std::thread::hardware_concurrency();
  js["frames"] = a.frames;
  js["warmup"] = a.warmup;
  js["cases"] = nlohmann::ordered_json::array();
  js["skipped"] = nlohmann::ordered_json::array();
  const Registry registry = default_registry();
  const std::string cases_dir = find_cases_dir(a.cases_dir);
  std::vector<BenchCase> cases = load_cases(cases_dir);
  for (const auto& name : a.cases)  // an unknown name is an error, never an empty result
    if (std::none_of(cases.begin(), cases.end(), [&](const BenchCase& c) { return c.name == name; })) {
      std::string known;
      for (const auto& c : cases) known += (known.empty() ? "" : " ") + c.name;
      throw ConfigError("bench: no case '" + name + "' in " + cases_dir + " (cases: " + known + ")");
    }
  double copy_gb_per_s = -1;  // measured before the first GPU chain case
  const auto named = [&](const BenchCase& c) {
    return a.cases.empty() || std::find(a.cases.begin(), a.cases.end(), c.name) != a.cases.end();
  };
  std::size_t total = 0, k = 0, streams = 0;
  double stream_s = 0;  // what the streaming cases take by their own durations (the MRD ones run twice)
  for (const BenchCase& c : cases) {
    if (!named(c)) continue;
    if (a.cases.empty() && c.long_run) {  // a no-argument run stays short; the long cases on request
      const std::string why =
          "takes minutes (" + c.what + "): run it by name, radstream bench --case " + c.name;
      log::info("bench: {} left out: {}", c.name, why);
      js["skipped"].push_back({{"case", c.name}, {"reason", why}});
      continue;
    }
    ++total;
    const bool twice = c.kind == BenchKind::MrdLive || c.kind == BenchKind::MrdSessions;
    if (c.kind == BenchKind::Live || c.kind == BenchKind::Ingest || twice) {
      ++streams;
      stream_s += (twice ? 2 : 1) * (c.duration_s + 2);  // (a stream's start and drain: about 2 s)
    }
  }
  const std::string estimate =
      streams == 0 ? std::string()
                   : fmt::format(
                         "; its {} stream(s) take about {:.0f} min {:.0f} s by their durations, the "
                         "other {} case(s) seconds to a minute each",
                         streams, std::floor(stream_s / 60), std::fmod(stream_s, 60.0), total - streams);
  log::info("bench: {} case(s){}{}{}", total, estimate,
            a.out.empty() ? "" : "; the JSON is written after each to ", a.out);
  Heartbeat beat("bench");  // a case can measure for a minute: a line at least every 1.5 s meanwhile
  for (BenchCase c : cases) {
    if (!named(c) || (a.cases.empty() && c.long_run)) continue;
    log::info("bench {}/{}: {}: {}", ++k, total, c.name, c.what);
    beat.doing(fmt::format("measuring case {} ({} of {})", c.name, k, total));
    save_partial(js, a.out);
    const bool movable =
        c.kind == BenchKind::Chain || c.kind == BenchKind::Nufft || c.kind == BenchKind::NufftSweep;
    const bool moved_to_cpu = a.backend == "cpu" && c.backend == Backend::Cuda && movable;
    if (moved_to_cpu) {  // a GPU case on the CPU: its GPU target does not apply
      c.backend = Backend::Cpu;
      c.recon.backend = BackendChoice::Cpu;
      c.recon.fft.engine = FftEngine::Auto;
    }
    const Backend b = c.backend;
    if (b == Backend::Cuda && !have_gpu) {
      std::string why = "needs a GPU: " + (gpu_info.available ? "CUDA stages not built" : gpu_info.reason);
      if (movable) why += " (--backend cpu runs it on the CPU)";
      js["skipped"].push_back({{"case", c.name}, {"reason", why}});
      continue;
    }
    if (c.kind != BenchKind::Chain) {
      js["cases"].push_back(c.kind == BenchKind::FftEngines
                                ? fft_engines_case(c, registry, a.frames, a.warmup)
                            : c.kind == BenchKind::Nufft       ? nufft_case(c, a.frames, a.warmup)
                            : c.kind == BenchKind::NufftSweep  ? nufft_sweep_case(c, a.frames, a.warmup)
                            : c.kind == BenchKind::Ingest      ? ingest_case(c)
                            : c.kind == BenchKind::MrdDecode   ? mrd_decode_case(c)
                            : c.kind == BenchKind::MrdLive     ? mrd_live_case(c, registry)
                            : c.kind == BenchKind::MrdSessions ? mrd_sessions_case(c, registry)
                                                               : live_case(c, registry));
      if (moved_to_cpu && !c.target.empty())
        js["cases"].back()["target_not_applied"] =
            "'" + c.target + "' is a GPU target; this run moved the case to the CPU (--backend cpu)";
      else if (!c.target.empty())
        js["cases"].back()["target"] = evaluate_target(c.target, js["cases"].back());
      continue;
    }
    if (b == Backend::Cuda && copy_gb_per_s < 0) copy_gb_per_s = measured_copy_bandwidth_gb_s();
    js["cases"].push_back(chain_case(c, moved_to_cpu, registry, a.frames, a.warmup, copy_gb_per_s));
  }
  js.erase("complete");
  js["load_average_1min_after"] = load_average();
  const int failed = print_summary(js);
  if (!a.baseline.empty()) report_baseline(js, a, cases_dir);
  write_report(js.dump(1) + "\n", a.out);
  if (failed) log::error("bench: {} target(s) failed", failed);
  return failed ? 1 : 0;
}

}  // namespace radstream::app
