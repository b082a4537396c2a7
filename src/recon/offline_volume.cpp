#include "recon/offline_volume.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/error.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "io/cfl.hpp"
#include "recon/backend.hpp"
#include "recon/coil_map_source.hpp"
#include "recon/recon_chain.hpp"
#include "recon/stack_of_stars.hpp"

namespace radstream {

namespace {

// Coil maps BART [N N P C] (or [N N 1 C]: the same maps for every partition) as one [C][N][N] block per
// partition.
std::vector<HostBuffer<cfloat>> read_volume_maps(const std::string& path, int N, int P, int C) {
  const CflArray a = read_cfl(path);
  bool extra = false;
  for (std::size_t i = 4; i < a.dims.size(); ++i) extra = extra || a.dims[i] != 1;
  const long depth = a.dim(2);
  if (a.dim(0) != N || a.dim(1) != N || (depth != P && depth != 1) || a.dim(3) != C || extra)
    throw IoError(
        fmt::format("{}: coil maps are [{}], expected [{} {} {} {}] (N N partitions coils) or "
                    "[{} {} 1 {}] for this stack of stars",
                    path, fmt::join(a.dims, " "), N, N, P, C, N, N, C));
  const std::size_t plane = std::size_t(N) * std::size_t(N);
  std::vector<HostBuffer<cfloat>> out;
  for (int z = 0; z < P; ++z) {
    HostBuffer<cfloat> m(Extents{std::size_t(C), std::size_t(N), std::size_t(N)});
    const long zs = depth == 1 ? 0 : z;
    for (int c = 0; c < C; ++c) {
      const cfloat* src = a.data.data() + (std::size_t(c) * std::size_t(depth) + std::size_t(zs)) * plane;
      for (std::size_t i = 0; i < plane; ++i) {
        if (!std::isfinite(src[i].real()) || !std::isfinite(src[i].imag()))
          throw IoError(
              fmt::format("{}: coil map value of coil {}, partition {} is not finite", path, c, zs));
        m[std::size_t(c) * plane + i] = src[i];
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

bool is_stack_of_stars(const OfflineRecon& job) {
  if (job.traj.empty()) return false;
  return stack_of_stars_layout(read_cfl(job.traj), job.partitions, job.traj).has_value();
}

OfflineVolume reconstruct_volume(const std::vector<Frame>& frames, const ReconParams& params_in,
                                 const std::string& sens, bool want_maps) {
  if (frames.empty()) throw InputError("a stack of stars with no partitions");
  ReconParams params = params_in;
  params.cg.sens.clear();  // the maps are set here per partition, never read by the chain as 2D maps
  const BackendDecision backend = resolve_backend(params.backend);
  log::info("backend: {} ({})", to_string(backend.backend), backend.reason);
  const Geometry& g = frames[0].geometry;
  const int P = int(frames.size()), N = g.matrix;
  const Registry registry = default_registry();
  ReconChain chain(params, backend.backend, registry);
  Heartbeat beat("recon");
  beat.doing("planning");
  chain.configure(g);
  beat.idle();
  std::vector<HostBuffer<cfloat>> given;
  if (chain.needs_coil_maps() && !sens.empty()) given = read_volume_maps(sens, N, P, g.coils);
  if (chain.needs_coil_maps())
    log::info("coil maps: {}", sens.empty() ? std::string("estimated from each partition's data") : sens);
  const CoilMapSource estimator(params);
  OfflineVolume out;
  out.matrix = N;
  out.partitions = P;
  const std::size_t plane = std::size_t(N) * std::size_t(N);
  out.image.resize(plane * std::size_t(P));
  if (want_maps && chain.needs_coil_maps()) {
    out.coils = g.coils;
    out.coil_maps.resize(plane * std::size_t(P) * std::size_t(g.coils));
  }
  std::vector<double> times;
  for (int z = 0; z < P; ++z) {
    const Frame& f = frames[std::size_t(z)];
    beat.doing(fmt::format("reconstructing partition {} of {}", z + 1, P), [&chain] {
      const std::string stage = chain.running_stage();
      return stage.empty() ? std::string() : "stage " + stage;
    });
    if (chain.needs_coil_maps()) {
      const HostBuffer<cfloat> maps = given.empty() ? estimator.estimate_now(chain, f) : HostBuffer<cfloat>();
      const HostBuffer<cfloat>& m = given.empty() ? maps : given[std::size_t(z)];
      chain.set_coil_maps(m.view());
      for (int c = 0; c < out.coils; ++c)
        std::copy(m.data() + std::size_t(c) * plane, m.data() + std::size_t(c + 1) * plane,
                  out.coil_maps.begin() + long((std::size_t(c) * std::size_t(P) + std::size_t(z)) * plane));
    }
    chain.reset_state();  // each partition its own problem: no warm start from the partition before
    const auto t0 = std::chrono::steady_clock::now();
    const View<const cfloat> image = chain.reconstruct(f);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    std::copy(image.data, image.data + plane, out.image.begin() + long(std::size_t(z) * plane));
  }
  beat.idle();
  double total = 0;
  for (double t : times) total += t;
  std::sort(times.begin(), times.end());
  log::info(
      "reconstruction: {} partitions of {}, {:.1f} ms in all (a partition: median {:.2f} ms, max {:.2f})", P,
      g.str(), total, times[times.size() / 2], times.back());
  return out;
}

void run_offline_volume(const OfflineRecon& a, const ReconParams& params) {
  if (!a.input.empty()) throw ConfigError("--partitions goes with --traj/--kspace (BART's layout)");
  if (a.matrix <= 0) throw ConfigError("--matrix N is required with --traj/--kspace");
  if (std::filesystem::path(a.out).extension() != ".cfl")
    throw ConfigError("--out " + a.out + ": a volume is written as .cfl (BART [N N partitions])");
  if (a.gradient_delay != "off")
    throw ConfigError("--gradient-delay " + a.gradient_delay + " is not applied to a stack of stars yet");
  const std::string what = a.traj + " + " + a.kspace;
  const CflArray t = read_cfl(a.traj), k = read_cfl(a.kspace);
  const auto layout = stack_of_stars_layout(t, a.partitions, a.traj);
  if (!layout) throw ConfigError(a.traj + ": not a stack of stars (every kz is 0)");
  int sampled = 0;
  for (const auto& s : layout->spokes_of) sampled += s.empty() ? 0 : 1;
  log::info("{}: a stack of stars, {} partitions ({} sampled) x {} spokes x {} samples", a.traj,
            layout->partitions, sampled, layout->spokes_per_partition, layout->samples);
  const std::vector<Frame> frames = stack_frames(*layout, t, k, a.matrix, what);
  const OfflineVolume v = reconstruct_volume(frames, params, params.cg.sens, !a.sens_out.empty());
  const long N = v.matrix, P = v.partitions;
  if (!a.sens_out.empty()) {
    if (v.coils == 0)
      throw ConfigError("--sens-out: --method " + to_string(params.method) +
                        " reads no coil maps in a stack of stars");
    write_cfl(a.sens_out, {N, N, P, v.coils}, v.coil_maps);
    log::info("wrote the coil maps to {} (BART [{} {} {} {}])", a.sens_out, N, N, P, v.coils);
  }
  write_cfl(a.out, {N, N, P}, v.image);
  log::info("wrote {} (BART [{} {} {}])", a.out, N, N, P);
}

}  // namespace radstream
