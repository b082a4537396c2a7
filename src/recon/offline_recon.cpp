#include "recon/offline_recon.hpp"

#include "noncart/gradient_delay.hpp"

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

#include "core/error.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "io/cfl.hpp"
#include "io/frame_io.hpp"
#include "io/mrd_check.hpp"
#include "io/mrd_file.hpp"
#include "recon/backend.hpp"
#include "recon/kooshball.hpp"
#include "recon/memory_budget.hpp"
#include "recon/offline_volume.hpp"
#include "recon/recon_chain.hpp"
#include "recon/stack_of_stars.hpp"

namespace radstream {

namespace {

// A 3D radial trajectory's volume [N N N] (recon/kooshball.hpp), written as .cfl.
void run_kooshball(const OfflineRecon& a, const ReconParams& params, const CflArray& t, const CflArray& k) {
  if (std::filesystem::path(a.out).extension() != ".cfl")
    throw ConfigError("--out " + a.out + ": a volume is written as .cfl (BART [N N N])");
  if (a.partitions != -1)
    throw ConfigError(a.traj +
                      ": --partitions goes with a stack of stars; this trajectory is 3D radial (kz "
                      "varies along its spokes)");
  const bool sense = params.method == ReconMethod::CgSense;
  log::info("{}: a 3D radial (kooshball) trajectory, {} spokes x {} samples: {} through the 3D NUFFT", a.traj,
            t.data.size() / 3 / std::size_t(std::max(1L, t.dim(1))), t.dim(1),
            sense ? "cg-sense" : "gridding");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string what = a.traj + " + " + a.kspace;
  const std::vector<cfloat> image = sense ? kooshball_cg_sense(t, k, a.matrix, params, what)
                                          : kooshball_gridding(t, k, a.matrix, params, what);
  log::info("volume: {:.0f} ms",
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  write_cfl(a.out, {a.matrix, a.matrix, a.matrix}, image);
  log::info("wrote {} (BART [{} {} {}])", a.out, a.matrix, a.matrix, a.matrix);
}

}  // namespace

void run_offline_recon(const OfflineRecon& a, const ReconParams& params) {
  if (a.input.empty() == (a.traj.empty() && a.kspace.empty()))
    throw ConfigError("give either --input FILE.h5 or both --traj T.cfl and --kspace K.cfl");
  if (a.input.empty() && (a.traj.empty() || a.kspace.empty()))
    throw ConfigError("--traj and --kspace go together");
  if (a.repeat < 1) throw ConfigError("--repeat " + std::to_string(a.repeat) + " must be >= 1");
  if (a.matrix == 0) throw ConfigError("--matrix 0: the image matrix N must be >= 1");
  check_image_output(a.out);  // before any work: a bad extension or a missing folder is said at once
  if (!a.input.empty() && a.partitions != -1)
    throw ConfigError("--partitions goes with --traj/--kspace (BART's layout)");

  const BackendDecision backend = resolve_backend(params.backend);
  const bool cuda = backend.backend == Backend::Cuda;
  Frame frame;
  if (!a.input.empty()) {
    check_mrd_in_child(a.input, a.start, a.count);  // a file that crashes HDF5 is refused, not a crash here
    // The spokes go straight into the frame, one at a time, once what the frame and the reconstruction need
    // is known to fit the memory budget (a 200,000-spoke file held twice took 4.5 GB).
    std::size_t n = 0;
    visit_mrd(
        a.input, a.start, a.count,
        [&](const StreamHeader& file_header, std::size_t spokes) {
          if (spokes == 0)
            throw InputError(a.input + ": no spokes to reconstruct from spoke " + std::to_string(a.start));
          StreamHeader h = file_header;
          if (a.matrix > 0) h.matrix = a.matrix;
          h.validate();
          const MemoryNeed need = memory_need(default_registry(), h, params, int(spokes), 0, 1, cuda);
          if (const std::string why = over_budget(need, memory_limit(a.memory_limit, "--memory-limit", cuda));
              !why.empty())
            throw ConfigError(
                fmt::format("{}: {} spokes from spoke {}: the reconstruction {}; read a window "
                            "with --start/--count or raise --memory-limit",
                            a.input, spokes, a.start, why));
          n = spokes;
          frame = Frame(h.geometry(int(spokes)));
        },
        [&](std::size_t i, Spoke&& s) { frame.set_spoke(int(i), s); });
    if (a.count > 0 && long(n) < a.count)
      log::warn("{}: --count {} from spoke {} asks for more than the file has; using the {} there are",
                a.input, a.count, a.start, n);
    log::info("{}: {} spokes from spoke {}", a.input, n, a.start);
  } else {
    if (a.matrix <= 0) throw ConfigError("--matrix N is required with --traj/--kspace");
    const CflArray t = read_cfl(a.traj), k = read_cfl(a.kspace);
    if (is_kooshball(t)) {  // kz along the spokes: no partition grid, the 3D NUFFT
      run_kooshball(a, params, t, k);
      return;
    }
    if (const auto layout = stack_of_stars_layout(t, a.partitions, a.traj)) {
      run_offline_volume(a, params, t, k, *layout);
      return;
    }
    if (a.partitions != -1) throw ConfigError(a.traj + ": not a stack of stars (every kz is 0)");
    frame = frame_from_bart(t, k, a.matrix, a.traj + " + " + a.kspace);
  }
  const OfflineImage result =
      reconstruct_offline(frame, params, a.gradient_delay, a.repeat, !a.sens_out.empty());
  const Geometry& g = frame.geometry;
  if (!a.sens_out.empty()) {
    if (result.coils == 0)
      throw ConfigError("--sens-out: --method " + to_string(params.method) + " uses no coil maps");
    write_cfl(a.sens_out, {g.matrix, g.matrix, 1, result.coils}, result.coil_maps);
    log::info("wrote the coil maps to {} (BART [{} {} 1 {}])", a.sens_out, g.matrix, g.matrix, result.coils);
  }
  write_image(a.out, result.image, g.matrix);
  log::info("wrote {}", a.out);
}

OfflineImage reconstruct_offline(Frame& frame, const ReconParams& params, const std::string& gradient_delay,
                                 int repeat, bool want_maps) {
  const BackendDecision backend = resolve_backend(params.backend);
  const Geometry& g = frame.geometry;
  if (gradient_delay != "off") {  // the trajectory corrected before any method sees it
    const GradientDelays d = gradient_delay == "auto"
                                 ? estimate_delays_ring(frame.traj.view().span(), frame.data.view().span(),
                                                        g.samples, g.spokes, g.coils)
                                 : parse_gradient_delays(gradient_delay, "--gradient-delay");
    apply_gradient_delays(frame.traj.view().span(), g.samples, g.spokes, d);
    log::info("gradient delays {} (x:y:xy, samples){}", d.str(),
              gradient_delay == "auto" ? " estimated by RING" : "");
  }
  log::info("backend: {} ({})", to_string(backend.backend), backend.reason);
  const Registry registry = default_registry();
  ReconChain chain(params, backend.backend, registry);
  Heartbeat beat("recon");  // no step is silent: a line at least every 1.5 s while one runs
  beat.doing(backend.backend == Backend::Cpu
                 ? fmt::format("planning (FFTW planner {})", kFftPlanners.name(params.fft.planner))
                 : std::string("planning"));
  const auto t0 = std::chrono::steady_clock::now();
  chain.configure(g);
  beat.idle();
  const double plan_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  log::info("configured for {} (dcf {}, W {}, sigma {}, planning {:.1f} ms{})", g.str(),
            to_string(params.density.method), params.gridding.width, params.gridding.oversampling, plan_ms,
            backend.backend == Backend::Cpu
                ? fmt::format(", FFTW planner {}", kFftPlanners.name(params.fft.planner))
                : std::string());
  if (chain.needs_coil_maps() && params.cg.sens.empty())
    log::info("coil maps: estimating them from the data ({})", kCoilMapMethods.name(params.cg.maps_method));
  beat.doing("estimating coil maps");
  chain.fix_coil_maps(frame);  // the file, or an estimate from these data, when the recipe reads coil maps
  beat.idle();
  OfflineImage out;
  if (want_maps && chain.needs_coil_maps()) {
    const auto maps = chain.coil_maps().span();
    out.coil_maps.assign(maps.begin(), maps.end());
    out.coils = g.coils;
  }

  std::vector<double> times;
  View<const cfloat> image;
  for (int r = 0; r < repeat; ++r) {
    beat.doing(repeat > 1 ? fmt::format("reconstructing (run {} of {})", r + 1, repeat)
                          : std::string("reconstructing"),
               [&chain] {
                 const std::string stage = chain.running_stage();
                 return stage.empty() ? std::string() : "stage " + stage;
               });
    const auto s = std::chrono::steady_clock::now();
    image = chain.reconstruct(frame);
    beat.idle();
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
  out.image.assign(image.span().begin(), image.span().end());
  return out;
}

}  // namespace radstream
