#include "recon/offline_volume.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <memory>
#include <thread>

#include <omp.h>

#include "core/error.hpp"
#include "core/heartbeat.hpp"
#include "core/log.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "io/cfl.hpp"
#include "recon/backend.hpp"
#include "recon/coil_map_source.hpp"
#include "recon/offline_volume_sense.hpp"
#include "recon/recon_chain.hpp"
#include "recon/rotated_stack.hpp"
#include "recon/stack_of_stars.hpp"
#include "recon/volume_chain.hpp"
#include "recon/volume_sense.hpp"

namespace radstream {

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

namespace {

// On the GPU every partition's frame goes up once (timed apart from the reconstruction, as a stream's spokes
// are on the device before their frame), and each partition is then copied on the device into the chain.
struct DeviceFrames {
  DeviceBuffer<cfloat> data;
  DeviceBuffer<float> traj;
  std::size_t block = 0;  // one partition's data
};

DeviceFrames upload(const std::vector<Frame>& frames) {
  DeviceFrames d;
  d.block = frames[0].data.size();
  d.data = DeviceBuffer<cfloat>(Extents{d.block * frames.size()});
  d.traj = DeviceBuffer<float>(Extents{frames[0].traj.size()});
  const gpu::Stream up;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t z = 0; z < frames.size(); ++z)
    gpu::copy_to_device(d.data.data() + z * d.block, frames[z].data.data(), d.block * sizeof(cfloat),
                        up.get());
  gpu::copy_to_device(d.traj.data(), frames[0].traj.data(), d.traj.size() * sizeof(float), up.get());
  gpu::synchronize(up.get());
  log::info("volume: {} partitions' data on the GPU ({:.0f} MB, {:.1f} ms)", frames.size(),
            double(d.block * frames.size() * sizeof(cfloat)) / 1e6,
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return d;
}

// The chain's image of frame f: from f on the host, or on the GPU from block z of the device copy (and from f
// on the host too when the chain estimates its coil maps).
View<const cfloat> chain_image(ReconChain& chain, const Frame& f, const DeviceFrames& dev, std::size_t z) {
  if (dev.block == 0) return chain.reconstruct(f);
  return chain.reconstruct_device(
      [&](cfloat* d_data, float* d_traj, gpu::StreamRef stream) {
        gpu::copy_device(d_data, dev.data.data() + z * dev.block, dev.block * sizeof(cfloat), stream);
        gpu::copy_device(d_traj, dev.traj.data(), dev.traj.size() * sizeof(float), stream);
        return true;
      },
      chain.wants_host_frame() ? &f : nullptr);
}

}  // namespace

bool is_stack_of_stars(const OfflineRecon& job) {
  if (job.traj.empty()) return false;
  return stack_of_stars_layout(read_cfl(job.traj), job.partitions, job.traj).has_value();
}

namespace {

// Each partition's coil maps [C][N][N]: the file's, or estimated from the partition's own data (timed apart).
std::vector<HostBuffer<cfloat>> volume_maps(const ReconChain& chain, const ReconParams& params,
                                            const std::vector<Frame>& frames, const std::string& sens,
                                            Heartbeat& beat) {
  const Geometry& g = frames[0].geometry;
  const int P = int(frames.size());
  if (!sens.empty()) {
    log::info("coil maps: {}", sens);
    return read_volume_maps(sens, g.matrix, P, g.coils);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const CoilMapSource estimator(params);
  std::vector<HostBuffer<cfloat>> maps;
  for (int z = 0; z < P; ++z) {
    beat.doing(fmt::format("estimating the coil maps of partition {} of {}", z + 1, P));
    maps.push_back(estimator.estimate_now(chain, frames[std::size_t(z)]));
  }
  beat.idle();
  log::info("coil maps: estimated from each partition's data ({} coils, {} partitions, {:.0f} ms)", g.coils,
            P, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return maps;
}

}  // namespace

namespace {

// One partition through a chain: its maps, a fresh state, its frame (from the device copy on the GPU); the
// image into its plane of the volume. Returns the time it took.
double reconstruct_partition(ReconChain& chain, int z, const std::vector<Frame>& frames,
                             const std::vector<HostBuffer<cfloat>>& maps, const DeviceFrames& dev,
                             OfflineVolume& out) {
  const Frame& f = frames[std::size_t(z)];
  const std::size_t plane = std::size_t(out.matrix) * std::size_t(out.matrix);
  if (!maps.empty()) chain.set_coil_maps(maps[std::size_t(z)].view());
  chain.reset_state();  // each partition its own problem: no warm start from the partition before
  const auto t0 = std::chrono::steady_clock::now();
  const View<const cfloat> image = chain_image(chain, f, dev, std::size_t(z));
  std::copy(image.data, image.data + plane, out.image.begin() + long(std::size_t(z) * plane));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// On the GPU the partitions may go through kLanes chains on their own threads and CUDA streams, so that one
// partition's host work (its launch, its wait for the image) overlaps another's kernels; on the CPU one chain
// (it has the cores already).
constexpr int kLanes = 2;

}  // namespace

namespace {

// The per-partition route's volume: the partitions through the chains (`lanes` of them, a second one tried
// where timed runs follow), the image into `out`; the median volume and partition times logged.
void run_partitions(std::vector<std::unique_ptr<ReconChain>>& chains, const std::vector<Frame>& frames,
                    const std::vector<HostBuffer<cfloat>>& maps, const DeviceFrames& dev, OfflineVolume& out,
                    int repeat, Heartbeat& beat) {
  const int lanes = int(chains.size()), P = int(frames.size());
  const Geometry& g = frames[0].geometry;
  ReconChain& chain = *chains[0];
  std::vector<std::vector<double>> partitions(static_cast<std::size_t>(lanes));
  // One volume through `use` lanes: lane k takes partitions k, k + use, ...; each lane's thread catches what
  // it throws, rethrown here. Returns the volume's wall time.
  auto run_volume = [&](int use) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::exception_ptr> failed(static_cast<std::size_t>(use));
    auto run_lane = [&](int k) {
      try {
        for (int z = k; z < P; z += use)
          partitions[std::size_t(k)].push_back(
              reconstruct_partition(*chains[std::size_t(k)], z, frames, maps, dev, out));
      } catch (...) {
        failed[std::size_t(k)] = std::current_exception();
      }
    };
    std::vector<std::thread> threads;
    for (int k = 1; k < use; ++k) threads.emplace_back(run_lane, k);
    run_lane(0);
    for (auto& t : threads) t.join();
    for (const auto& e : failed)
      if (e) std::rethrow_exception(e);
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  const auto stage_detail = [&chain] {
    const std::string stage = chain.running_stage();
    return stage.empty() ? std::string() : "stage " + stage;
  };
  // Timed runs on the GPU follow two untimed volumes, which capture the chains' CUDA graphs and choose the
  // lanes by their wall times: on V1 two partitions at a time took 4.5-4.7 ms a volume for gridding against
  // 6.1-6.6 ms (its host work hidden behind the other partition's kernels) and 133-138 ms for CG-SENSE
  // against 182-188 ms (each partition's coil maps go up from the host, overlapped with the other's solve).
  int use = 1;
  const bool warmed = dev.block != 0 && repeat > 1;
  if (warmed) {
    beat.doing(fmt::format("reconstructing {} partitions (untimed warm-ups)", P), stage_detail);
    const double two = lanes > 1 ? run_volume(lanes) : 0, one = run_volume(1);
    use = lanes > 1 && two < one ? lanes : 1;
    log::debug("volume: warm-ups {:.2f} ms with {} lanes, {:.2f} ms with one", two, lanes, one);
    for (auto& l : partitions) l.clear();
  }
  std::vector<double> volumes;
  for (int r = 0; r < repeat; ++r) {
    beat.doing(repeat > 1 ? fmt::format("reconstructing {} partitions (run {} of {})", P, r + 1, repeat)
                          : fmt::format("reconstructing {} partitions", P),
               stage_detail);
    volumes.push_back(run_volume(use));
  }
  beat.idle();
  std::vector<double> each;
  for (const auto& l : partitions) each.insert(each.end(), l.begin(), l.end());
  std::sort(volumes.begin(), volumes.end());
  std::sort(each.begin(), each.end());
  log::info(
      "reconstruction: {} partitions of {} ({} at a time): a volume median {:.2f} ms over {} run(s) (min "
      "{:.2f}, max {:.2f}{}); a partition median {:.3f} ms, max {:.3f}",
      P, g.str(), use, volumes[volumes.size() / 2], volumes.size(), volumes.front(), volumes.back(),
      warmed ? ", after untimed warm-ups" : "", each[each.size() / 2], each.back());
}

// The z positions as one batch through one chain (batches_partitions): their frames as the images of one
// frame (on the GPU: up once, timed apart), the volume `repeat` times (after an untimed one that captures the
// chain's graph when timed runs follow), the median logged.
void run_batched(const std::vector<Frame>& frames, const ReconParams& params, Backend backend,
                 const Registry& registry, OfflineVolume& out, int repeat, Heartbeat& beat) {
  const int P = int(frames.size());
  const Geometry plane = frames[0].geometry;
  std::vector<Frame> one;
  one.emplace_back(batched_geometry(plane, P));
  Frame& all = one[0];
  const std::size_t block = frames[0].data.size();
  for (int z = 0; z < P; ++z)
    std::copy(frames[std::size_t(z)].data.begin(), frames[std::size_t(z)].data.end(),
              all.data.begin() + long(std::size_t(z) * block));
  std::copy(frames[0].traj.begin(), frames[0].traj.end(), all.traj.begin());
  beat.doing("planning");
  ReconChain chain(params, backend, registry);
  chain.configure(all.geometry);
  const DeviceFrames dev = backend == Backend::Cuda ? upload(one) : DeviceFrames{};
  auto run = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    const View<const cfloat> image = chain_image(chain, all, dev, 0);
    std::copy(image.data, image.data + image.size(), out.image.begin());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  if (dev.block != 0 && repeat > 1) {
    beat.doing(fmt::format("reconstructing {} partitions as one batch (untimed warm-up)", P));
    run();
  }
  std::vector<double> volumes;
  for (int r = 0; r < repeat; ++r) {
    beat.doing(repeat > 1
                   ? fmt::format("reconstructing {} partitions as one batch (run {} of {})", P, r + 1, repeat)
                   : fmt::format("reconstructing {} partitions as one batch", P));
    volumes.push_back(run());
  }
  beat.idle();
  std::sort(volumes.begin(), volumes.end());
  log::info(
      "reconstruction: {} partitions of {} as one batch: a volume median {:.2f} ms over {} run(s) "
      "(min {:.2f}, max {:.2f}{})",
      P, plane.str(), volumes[volumes.size() / 2], volumes.size(), volumes.front(), volumes.back(),
      dev.block != 0 && repeat > 1 ? ", after an untimed warm-up" : "");
}

}  // namespace

namespace {

// The partitions' maps ([C][N][N] each) into out.coil_maps, BART's [N N P C].
void keep_maps(const std::vector<HostBuffer<cfloat>>& maps, int coils, OfflineVolume& out) {
  const std::size_t plane = std::size_t(out.matrix) * std::size_t(out.matrix), P = maps.size();
  out.coils = coils;
  out.coil_maps.resize(plane * P * std::size_t(coils));
  for (std::size_t z = 0; z < P; ++z)
    for (int c = 0; c < coils; ++c)
      std::copy(maps[z].data() + std::size_t(c) * plane, maps[z].data() + std::size_t(c + 1) * plane,
                out.coil_maps.begin() + long((std::size_t(c) * P + z) * plane));
}

}  // namespace

OfflineVolume reconstruct_volume(const std::vector<Frame>& frames, const ReconParams& params_in,
                                 const std::string& sens, bool want_maps, int repeat) {
  if (frames.empty()) throw InputError("a stack of stars with no partitions");
  ReconParams params = params_in;
  params.cg.sens.clear();  // the maps are set here per partition, never read by the chain as 2D maps
  const BackendDecision backend = resolve_backend(params.backend);
  log::info("backend: {} ({})", to_string(backend.backend), backend.reason);
  const Geometry& g = frames[0].geometry;
  const int P = int(frames.size()), N = g.matrix;
  const std::size_t plane = std::size_t(N) * std::size_t(N);
  const Registry registry = default_registry();
  Heartbeat beat("recon");
  if (batches_partitions(params)) {
    OfflineVolume out;
    out.matrix = N;
    out.partitions = P;
    out.image.resize(plane * std::size_t(P));
    run_batched(frames, params, backend.backend, registry, out, repeat, beat);
    return out;
  }
  // cg-sense solves the volume as one problem (volume_sense.hpp) unless a setting needs each partition's
  // own chain.
  const std::string refusal =
      params.method == ReconMethod::CgSense ? volume_sense_refusal(params.cg) : std::string("not cg-sense");
  const bool joint = refusal.empty();
  if (params.method == ReconMethod::CgSense && !joint)
    log::info("cg-sense: each partition solved on its own: {}", refusal);
  // A second lane is tried only where timed runs follow (below).
  const int lanes = backend.backend == Backend::Cuda && repeat > 1 && !joint ? std::min(kLanes, P) : 1;
  std::vector<std::unique_ptr<ReconChain>> chains;
  beat.doing("planning");
  for (int k = 0; k < lanes; ++k) {
    chains.push_back(std::make_unique<ReconChain>(params, backend.backend, registry));
    chains.back()->configure(g);
  }
  beat.idle();
  ReconChain& chain = *chains[0];
  const std::vector<HostBuffer<cfloat>> maps = chain.needs_coil_maps()
                                                   ? volume_maps(chain, params, frames, sens, beat)
                                                   : std::vector<HostBuffer<cfloat>>();
  OfflineVolume out;
  out.matrix = N;
  out.partitions = P;
  out.image.resize(plane * std::size_t(P));
  if (want_maps && !maps.empty()) keep_maps(maps, g.coils, out);
  const DeviceFrames dev = chain.backend() == Backend::Cuda ? upload(frames) : DeviceFrames{};
  if (joint) {
    beat.doing(fmt::format("cg-sense over the volume ({} partitions{})", P,
                           repeat > 1 ? fmt::format(", {} timed runs", repeat) : std::string()));
    out.image = solve_volume_sense({&frames, &maps, dev.data.data(), dev.traj.data()}, params,
                                   chain.backend(), repeat);
    beat.idle();
    return out;
  }
  run_partitions(chains, frames, maps, dev, out, repeat, beat);
  return out;
}

void run_offline_volume(const OfflineRecon& a, const ReconParams& params, const CflArray& t,
                        const CflArray& k, const StackLayout& layout) {
  if (a.matrix <= 0) throw ConfigError("--matrix N is required with --traj/--kspace");
  if (std::filesystem::path(a.out).extension() != ".cfl")
    throw ConfigError("--out " + a.out + ": a volume is written as .cfl (BART [N N partitions])");
  if (a.gradient_delay != "off")
    throw ConfigError("--gradient-delay " + a.gradient_delay + " is not applied to a stack of stars yet");
  const std::string what = a.traj + " + " + a.kspace;
  int sampled = 0;
  for (const auto& s : layout.spokes_of) sampled += s.empty() ? 0 : 1;
  log::info("{}: a stack of stars, {} partitions ({} sampled) x {} spokes x {} samples", a.traj,
            layout.partitions, sampled, layout.spokes_per_partition, layout.samples);
  if ((layout.rotated || a.stack_3d) &&
      (params.method == ReconMethod::Gridding ||
       (params.method == ReconMethod::CgSense && !params.cg.sens.empty()))) {
    if (!a.sens_out.empty())
      throw ConfigError("--sens-out: no coil maps are estimated for rotated partitions");
    const bool sense = params.method == ReconMethod::CgSense;
    log::info("{}: {}: {} through the 3D NUFFT", a.traj,
              layout.rotated ? "partitions rotated against each other" : "--stack-3d",
              sense ? "cg-sense" : "gridding");
    // Each run whole (the volume's layout, the 3D plan, its transfers); with --repeat the median is logged.
    std::vector<cfloat> image;
    std::vector<double> ms;
    for (int r = 0; r < a.repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      image = sense ? rotated_stack_cg_sense(
                          layout, t, k, a.matrix,
                          read_volume_maps(params.cg.sens, a.matrix, layout.partitions,
                                           int(k.data.size() / std::size_t(layout.samples * t.dim(2)))),
                          params, what)
                    : rotated_stack_gridding(layout, t, k, a.matrix, params, what);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    log::info("volume through the 3D NUFFT: median {:.1f} ms over {} run(s) (min {:.1f}, max {:.1f})",
              ms[ms.size() / 2], ms.size(), ms.front(), ms.back());
    write_cfl(a.out, {a.matrix, a.matrix, layout.partitions}, image);
    log::info("wrote {} (BART [{} {} {}])", a.out, a.matrix, a.matrix, layout.partitions);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<Frame> frames = stack_frames(layout, t, k, a.matrix, what);
  log::info("volume: the inverse DFT along kz on the CPU ({} threads), {:.0f} ms", omp_get_max_threads(),
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  const OfflineVolume v = reconstruct_volume(frames, params, params.cg.sens, !a.sens_out.empty(), a.repeat);
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
