// Where a chain's coil maps come from, for every recipe that reads them (cg-sense, coil_combine: sense):
// a file (recon.sens, BART [N N 1 coils]), read once; or estimates from the frames themselves
// (recon/coil_map_estimate.hpp): the first frame's synchronously (usable maps within one window of the
// start), then every maps_every frames on a helper thread, off the frame's critical path, handed to the chain
// with a new version when ready. A failed estimate is logged and the previous maps stay. A GPU stream hands a
// refresh only the band of samples it reads (SpokeRing::copy_window_band), not its whole window.
#pragma once
#include <cstdint>
#include <future>
#include <string>

#include "core/frame.hpp"
#include "recon/coil_map_estimate.hpp"
#include "recon/recon_chain.hpp"

namespace radstream {

class CoilMapSource {
 public:
  // quick_first (Walsh's method only): the first estimate is the fast local one (Walsh alone), so that a
  // stream has maps within its first window; the refined estimate follows at once on the helper thread.
  // Offline: refined from the start. ESPIRiT has no quick form: its first estimate is the full one.
  explicit CoilMapSource(const ReconParams& p, bool quick_first = false);
  ~CoilMapSource();
  CoilMapSource(const CoilMapSource&) = delete;
  CoilMapSource& operator=(const CoilMapSource&) = delete;

  // True when the next update() needs the frame's data on the host (the first estimate or a due refresh);
  // a GPU stream copies its window to the host only then.
  bool wants_frame(const ReconChain& chain) const;
  // When a refresh is due (the chain has maps, none is in flight): the band's radius (coil_map_band_radius)
  // whose samples update() may take instead of the frame; 0 otherwise.
  double refresh_band(const ReconChain& chain) const;
  // Call once per frame before chain.reconstruct(): gives the chain maps when it reads them and new ones are
  // due or ready; returns true when it did. frame may be null when wants_frame() was false. Throws IoError /
  // InputError when the file does not fit the chain's geometry.
  // band: a due refresh's samples (refresh_band()), in place of the frame.
  bool update(ReconChain& chain, const Frame* frame, CoilMapBand* band = nullptr);
  bool update(ReconChain& chain, const Frame& frame) { return update(chain, &frame); }
  // This frame's maps estimated now on the caller's thread, whatever the chain holds (the first frame's; each
  // partition of a volume its own), [coils][N][N] for the chain's geometry.
  HostBuffer<cfloat> estimate_now(const ReconChain& chain, const Frame& frame) const;
  // Waits for a refresh in flight (tests and the end of a run).
  void wait();
  std::uint64_t estimates() const { return estimates_; }  // how many estimates were made
  bool from_file() const { return !path_.empty(); }

 private:
  CoilMapEstimate estimate_settings(const ReconChain& chain) const;
  std::string path_;
  CgSenseParams cg_;  // the estimate's settings (coil_map_settings)
  int every_;
  bool quick_first_, refine_due_ = false;
  std::uint64_t frames_ = 0, estimates_ = 0;
  std::future<HostBuffer<cfloat>> pending_;
};

}  // namespace radstream
