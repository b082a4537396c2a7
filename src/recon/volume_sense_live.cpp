#include "recon/volume_sense_live.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/coil_map_power.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "core/magnitude.hpp"
#include "gpu/handles.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/offline_volume.hpp"

namespace radstream {
namespace {

// The largest sum over coils of |S|^2 in the volume's maps [P][C][N][N].
double peak_power(const std::vector<cfloat>& maps, int P, const Geometry& g) {
  return volume_map_peak_power(maps.data(), std::size_t(P), std::size_t(g.coils),
                               std::size_t(g.matrix) * std::size_t(g.matrix));
}

}  // namespace

VolumeSenseLive::VolumeSenseLive(const ReconParams& p, Backend backend) : p_(p), backend_(backend) {}

VolumeSenseLive::~VolumeSenseLive() {
  if (pending_.valid()) pending_.wait();
}

void VolumeSenseLive::configure(const Geometry& plane, int P) {
  if (pending_.valid()) pending_.wait();
  pending_ = {};
  plane_ = plane;
  P_ = P;
  const int N = plane.matrix;
  const std::size_t pixels = std::size_t(N) * N, V = std::size_t(P) * pixels;
  const VolumeSenseShape shape{N, P, plane.coils, std::size_t(plane.spokes) * std::size_t(plane.samples)};
  solver_.reset();
  if (backend_ == Backend::Cuda) {
    device_ = gpu::current_device();
    stream_ = std::make_unique<gpu::Stream>();
    solver_ = make_volume_sense_cuda(shape, p_.cg, p_.gridding.kernel(), stream_->get());
    d_maps_ = DeviceBuffer<cfloat>(Extents{V * std::size_t(plane.coils)});
    d_spare_ = DeviceBuffer<cfloat>(Extents{V * std::size_t(plane.coils)});
    d_x_ = DeviceBuffer<cfloat>(Extents{V});
  } else {
    solver_ = make_volume_sense_cpu(shape, p_.cg, p_.gridding.kernel(), p_.threads);
    x_.assign(V, cfloat());
  }
  have_x_ = have_maps_ = false;
  volumes_ = 0;
  estimates_ = 0;
  maps_.clear();
  if (!p_.cg.sens.empty()) {
    Maps m;
    for (const auto& z : read_volume_maps(p_.cg.sens, N, P, plane.coils))
      m.insert(m.end(), z.data(), z.data() + z.size());
    take_maps(std::move(m));
    log::info("coil maps: {} ({} coils, {} partitions, {}^2)", p_.cg.sens, plane.coils, P, N);
  }
  log::info("cg-sense: the {} partitions as one solve of {} iterations (batched over partitions x coils)", P,
            p_.cg.iterations);
}

bool VolumeSenseLive::wants_host_frames() const {
  if (backend_ == Backend::Cpu) return true;
  return p_.cg.sens.empty() && !have_maps_;
}

bool VolumeSenseLive::refresh_due() const {
  return p_.cg.sens.empty() && have_maps_ && !pending_.valid() && volumes_ > 0 &&
         volumes_ % p_.cg.maps_every == 0;
}

void VolumeSenseLive::refresh_from_device(const cfloat* d_data, const float* d_traj) {
  const Geometry g = plane_;
  const std::size_t lines = std::size_t(g.coils) * g.spokes * g.samples,
                    traj = std::size_t(g.spokes) * g.samples * 2;
  if (d_stage_.size() != lines * std::size_t(P_)) {
    d_stage_ = DeviceBuffer<cfloat>(Extents{lines * std::size_t(P_)});
    d_stage_traj_ = DeviceBuffer<float>(Extents{traj});
  }
  gpu::copy_device(d_stage_.data(), d_data, d_stage_.size() * sizeof(cfloat), stream_->get());
  gpu::copy_device(d_stage_traj_.data(), d_traj, traj * sizeof(float), stream_->get());
  stream_->synchronize();
  CoilMapEstimate est = coil_map_settings(p_.cg, backend_, device_);
  est.threads = 2;  // in the background: leave the other cores to ingest and the reconstruction
  // The staged copy is not written again before this future is collected (no refresh starts meanwhile).
  // The maps go up into d_spare_ from the helper too: the worker only swaps them in (an upload of every
  // partition's maps from the host would hold the volume that takes them).
  pending_ = std::async(std::launch::async, [g, lines, traj, est, data = d_stage_.data(),
                                             d_t = d_stage_traj_.data(), spare = d_spare_.data(), P = P_,
                                             device = device_] {
    const gpu::DeviceGuard on(device);
    const gpu::Stream s;
    std::vector<float> t(traj);
    gpu::copy_to_host(t.data(), d_t, traj * sizeof(float), s.get());
    std::vector<cfloat> z(lines);
    const Extents data_ext{std::size_t(g.coils), std::size_t(g.spokes), std::size_t(g.samples)},
        traj_ext{std::size_t(g.spokes), std::size_t(g.samples), 2};
    Maps m;
    for (int k = 0; k < P; ++k) {
      gpu::copy_to_host(z.data(), data + std::size_t(k) * lines, lines * sizeof(cfloat), s.get());
      s.synchronize();
      const CoilMapBand band = coil_map_band(View<const cfloat>{z.data(), data_ext},
                                             View<const float>{t.data(), traj_ext}, g.matrix, est);
      const HostBuffer<cfloat> maps = estimate_coil_maps(band.data.view(), band.traj.view(), g.matrix, est);
      m.insert(m.end(), maps.data(), maps.data() + maps.size());
    }
    Estimate e{std::move(m), 0.0};
    e.peak = peak_power(e.maps, P, g);
    gpu::copy_to_device(spare, e.maps.data(), e.maps.size() * sizeof(cfloat), s.get());
    s.synchronize();
    return e;
  });
}

VolumeSenseLive::Maps VolumeSenseLive::estimate_all(const std::vector<Frame>& frames) const {
  CoilMapEstimate est = coil_map_settings(p_.cg, backend_, device_);
  Maps m;
  m.reserve(std::size_t(P_) * plane_.coils * plane_.matrix * plane_.matrix);
  for (const Frame& f : frames) {
    const HostBuffer<cfloat> z = estimate_coil_maps(f.data.view(), f.traj.view(), plane_.matrix, est);
    m.insert(m.end(), z.data(), z.data() + z.size());
  }
  return m;
}

void VolumeSenseLive::take_estimate(Estimate e) {
  if (backend_ != Backend::Cuda) return take_maps(std::move(e.maps), e.peak);
  // Uploaded into d_spare_ by the helper; the volume before has been solved (and waited for) with the old
  // maps, which become the next refresh's target. The host's copy is not kept.
  std::swap(d_maps_, d_spare_);
  solver_->set_maps(d_maps_.data(), e.peak);
  have_maps_ = true;
}

void VolumeSenseLive::take_maps(Maps m, double peak) {
  if (peak < 0) peak = peak_power(m, P_, plane_);
  if (backend_ == Backend::Cuda) {
    // After the volume before has been solved with the old maps (the same stream), and waited for; the
    // host's copy goes once it is up.
    gpu::copy_to_device(d_maps_.data(), m.data(), m.size() * sizeof(cfloat), stream_->get());
    stream_->synchronize();
    solver_->set_maps(d_maps_.data(), peak);
  } else {
    maps_ = std::move(m);  // the CPU's solver reads them from here
    solver_->set_maps(maps_.data(), peak);
  }
  have_maps_ = true;
}

void VolumeSenseLive::update_maps(const std::vector<Frame>* frames) {
  if (!p_.cg.sens.empty()) return;
  if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    try {
      take_estimate(pending_.get());
      ++estimates_;
    } catch (const std::exception& e) {
      log::warn("coil maps: a refresh of the volume's maps failed, keeping the previous ones: {}", e.what());
    }
  }
  if (!frames) return;
  if (!have_maps_) {  // the first volume waits for its maps
    const auto t0 = std::chrono::steady_clock::now();
    take_maps(estimate_all(*frames));
    ++estimates_;
    log::info("coil maps: estimated from each of the {} partitions ({} coils, {}^2, {:.0f} ms)", P_,
              plane_.coils, plane_.matrix,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    return;
  }
  if (pending_.valid() || volumes_ == 0 || volumes_ % p_.cg.maps_every != 0) return;
  // A refresh on a helper thread, from a copy of each z position's low-resolution band.
  CoilMapEstimate est = coil_map_settings(p_.cg, backend_, device_);
  est.threads = 2;  // in the background: leave the other cores to ingest and the reconstruction
  auto bands = std::make_shared<std::vector<CoilMapBand>>();
  for (const Frame& f : *frames)
    bands->push_back(coil_map_band(f.data.view(), f.traj.view(), plane_.matrix, est));
  pending_ = std::async(std::launch::async, [bands, g = plane_, P = P_, est] {
    Maps m;
    for (const CoilMapBand& b : *bands) {
      const HostBuffer<cfloat> z = estimate_coil_maps(b.data.view(), b.traj.view(), g.matrix, est);
      m.insert(m.end(), z.data(), z.data() + z.size());
    }
    const double peak = peak_power(m, P, g);
    return Estimate{std::move(m), peak};
  });
}

void VolumeSenseLive::reconstruct(const std::vector<Frame>& frames, std::vector<cfloat>& volume) {
  update_maps(&frames);
  staged_.clear();
  for (const Frame& f : frames) staged_.insert(staged_.end(), f.data.data(), f.data.data() + f.data.size());
  const bool warm = p_.cg.warm_start && have_x_;
  solver_->solve(staged_.data(), frames[0].traj.data(), x_.data(), warm);
  have_x_ = true;
  ++volumes_;
  volume.resize(x_.size());
  magnitude_image(x_.data(), x_.size(), volume.data());
}

void VolumeSenseLive::reconstruct_device(const cfloat* d_data, const float* d_traj,
                                         const std::vector<Frame>* frames, std::vector<cfloat>& volume) {
  update_maps(frames);
  if (!have_maps_) throw InputError("cg-sense over a volume: no coil maps yet (the first volume's frames)");
  if (refresh_due()) refresh_from_device(d_data, d_traj);
  const bool warm = p_.cg.warm_start && have_x_;
  solver_->solve(d_data, d_traj, d_x_.data(), warm);
  have_x_ = true;
  ++volumes_;
  x_.resize(d_x_.size());
  gpu::copy_to_host(x_.data(), d_x_.data(), x_.size() * sizeof(cfloat), stream_->get());
  stream_->synchronize();
  volume.resize(x_.size());
  magnitude_image(x_.data(), x_.size(), volume.data());
}

}  // namespace radstream
