// A volume stream's CG-SENSE as one solve over the volume (volume_sense.hpp): what a stream adds to the
// solver. The coil maps of every partition come from recon.sens (BART [N N P C] or [N N 1 C]) or are
// estimated from the volume's own z positions: the first volume's before it is solved, then every
// maps_every volumes on a helper thread, handed over once all are ready (the volume in flight keeps the maps
// it started with). On the GPU a refresh costs the worker one copy of the z positions on the device; the
// helper brings that copy to the host on its own stream and cuts each z position's low-resolution band. Each
// volume starts from the one before (recon.warm_start). The volume comes out as magnitudes [P][N][N] (in the
// real parts), as a chain's frame does.
#pragma once
#include <future>
#include <memory>
#include <vector>

#include "core/frame.hpp"
#include "gpu/device_memory.hpp"
#include "recon/backend.hpp"
#include "recon/recon_params.hpp"
#include "recon/volume_sense.hpp"

namespace radstream {

class VolumeSenseLive {
 public:
  VolumeSenseLive(const ReconParams& p, Backend backend);
  ~VolumeSenseLive();
  VolumeSenseLive(const VolumeSenseLive&) = delete;
  VolumeSenseLive& operator=(const VolumeSenseLive&) = delete;

  // plane: one z position's geometry; P partitions. Throws ConfigError as the solver does, IoError for a bad
  // recon.sens.
  void configure(const Geometry& plane, int P);
  // Whether the next volume's z positions are wanted on the host (its maps are estimated from them): the
  // first volume (on the GPU; a refresh there takes them from the device). The CPU's frames are always on
  // the host.
  bool wants_host_frames() const;
  // The CPU: the z positions' frames (one trajectory). Into `volume` [P][N][N].
  void reconstruct(const std::vector<Frame>& frames, std::vector<cfloat>& volume);
  // The GPU: d_data [P][coils][points] and d_traj [points][2] there; `frames` the same on the host when
  // wants_host_frames() said so (else null). Waits for the solve.
  void reconstruct_device(const cfloat* d_data, const float* d_traj, const std::vector<Frame>* frames,
                          std::vector<cfloat>& volume);
  // Estimates made so far (the first included).
  int estimates() const { return estimates_; }

 private:
  using Maps = std::vector<cfloat>;  // [P][C][N][N]
  struct Estimate {                  // a refresh's maps and their peak power (made on the helper thread)
    Maps maps;
    double peak = 0;
  };
  ReconParams p_;
  Backend backend_;
  int device_ = 0;
  Geometry plane_;
  int P_ = 0;
  std::unique_ptr<gpu::Stream> stream_;
  std::unique_ptr<VolumeSense> solver_;
  Maps maps_;  // the CPU solver's maps (the GPU's are in d_maps_ only)
  DeviceBuffer<cfloat> d_maps_, d_x_;
  DeviceBuffer<cfloat> d_spare_;  // the GPU's next maps, uploaded by the refresh's helper (then swapped in)
  DeviceBuffer<cfloat> d_stage_;  // a refresh's copy of the z positions' data, read by the helper
  DeviceBuffer<float> d_stage_traj_;
  std::vector<cfloat> x_;       // the CPU's solution (the next volume's start)
  std::vector<cfloat> staged_;  // the CPU's data [P][C][points]
  bool have_x_ = false, have_maps_ = false;
  long volumes_ = 0;
  int estimates_ = 0;
  std::future<Estimate> pending_;
  void update_maps(const std::vector<Frame>* frames);
  bool refresh_due() const;
  void refresh_from_device(const cfloat* d_data, const float* d_traj);
  void take_maps(Maps m, double peak = -1);  // peak < 0: computed here
  void take_estimate(Estimate e);            // a refresh's: on the GPU already uploaded into d_spare_
  Maps estimate_all(const std::vector<Frame>& frames) const;
};

}  // namespace radstream
