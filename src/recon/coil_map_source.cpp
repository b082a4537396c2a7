#include "recon/coil_map_source.hpp"

#include <memory>

#include "core/error.hpp"
#include "core/log.hpp"
#include "io/frame_io.hpp"
#include "recon/coil_map_estimate.hpp"

namespace radstream {

CoilMapSource::CoilMapSource(const ReconParams& p, bool quick_first)
    : path_(p.cg.sens),
      cg_(p.cg),
      every_(p.cg.maps_every),
      quick_first_(quick_first && p.cg.maps_method == CoilMapMethod::Walsh) {}

CoilMapSource::~CoilMapSource() {
  wait();
}

void CoilMapSource::wait() {
  if (pending_.valid()) pending_.wait();
}

bool CoilMapSource::wants_frame(const ReconChain& chain) const {
  if (!chain.needs_coil_maps() || !path_.empty()) return false;
  return !chain.has_coil_maps() ||
         (!pending_.valid() && (refine_due_ || (frames_ + 1) % std::uint64_t(every_) == 0));
}

double CoilMapSource::refresh_band(const ReconChain& chain) const {
  if (!chain.has_coil_maps() || !wants_frame(chain)) return 0;
  return coil_map_band_radius(chain.geometry().matrix, estimate_settings(chain));
}

CoilMapEstimate CoilMapSource::estimate_settings(const ReconChain& chain) const {
  return coil_map_settings(cg_, chain.backend(), chain.device());
}

HostBuffer<cfloat> CoilMapSource::estimate_now(const ReconChain& chain, const Frame& frame) const {
  CoilMapEstimate first = estimate_settings(chain);
  if (quick_first_) first.refine.matrix = 0;
  return estimate_coil_maps(frame.data.view(), frame.traj.view(), chain.geometry().matrix, first);
}

bool CoilMapSource::update(ReconChain& chain, const Frame* frame, CoilMapBand* given) {
  if (!chain.needs_coil_maps()) return false;
  const bool want = wants_frame(chain);
  ++frames_;
  const Geometry& g = chain.geometry();
  if (!path_.empty()) {
    if (chain.has_coil_maps()) return false;
    const HostBuffer<cfloat> maps = read_coil_maps(path_, g.matrix, g.coils);
    chain.take_coil_maps(maps.view());
    log::info("coil maps: {} ({} coils, {}^2)", path_, g.coils, g.matrix);
    return true;
  }
  if (want && !frame && !(given && chain.has_coil_maps()))
    throw InputError("coil maps: an estimate is due but no frame was given");
  CoilMapEstimate est = estimate_settings(chain);
  if (!chain.has_coil_maps()) {  // the first frame waits for its maps
    const HostBuffer<cfloat> maps = estimate_now(chain, *frame);
    chain.take_coil_maps(maps.view());
    ++estimates_;
    refine_due_ = quick_first_;
    if (cg_.maps_method == CoilMapMethod::Espirit)
      log::info(
          "coil maps: estimated from the data by ESPIRiT ({} coils, {}^2 from a {}^2 eigen-grid on the {}, "
          "{})",
          g.coils, g.matrix, std::min(cg_.maps_matrix, g.matrix),
          est.backend == Backend::Cuda ? "GPU" : "CPU",
          cg_.sens_mask == SensMask::Auto ? "faded smoothly where the coils see no signal"
                                          : "no support mask");
    else
      log::info(
          "coil maps: estimated from the data ({} coils, {}^2 from a {}^2 low-resolution Walsh fit{})",
          g.coils, g.matrix, std::min(cg_.maps_matrix, g.matrix),
          quick_first_ ? "; the refined estimate follows in the background" : ", refined against the data");
    return true;
  }
  bool updated = false;
  if (pending_.valid() && pending_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    try {
      const HostBuffer<cfloat> maps = pending_.get();
      chain.take_coil_maps(maps.view());
      ++estimates_;
      updated = true;
    } catch (const std::exception& e) {
      log::warn("coil maps: a refresh failed, keeping the previous maps: {}", e.what());
    }
  }
  if (want) {
    refine_due_ = false;
    est.threads = 2;  // in the background: leave the other cores to ingest and the reconstruction
    // The helper works on its own copy of the frame's low-resolution band; an exception travels through the
    // future and is reported when collected.
    auto band = std::make_shared<CoilMapBand>(
        given ? std::move(*given) : coil_map_band(frame->data.view(), frame->traj.view(), g.matrix, est));
    pending_ = std::async(std::launch::async, [band, N = g.matrix, est] {
      return estimate_coil_maps(band->data.view(), band->traj.view(), N, est);
    });
  }
  return updated;
}

}  // namespace radstream
