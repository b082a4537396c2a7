// The volume path of a ReconWorker: a stack of stars' window of spokes (every partition's) copied from the
// ring, sorted into its steps and partitions, and reconstructed by VolumeChain (the z positions as one batch,
// one solve, or one chain each, by method).
#include <fmt/format.h>

#include <thread>
#include <utility>

#include "core/clock.hpp"
#include "stream/recon_worker.hpp"

namespace radstream {

bool ReconWorker::make_volume(VolumeChain& volume, SpokeRing& ring, std::uint64_t end, Frame& host_frame,
                              FrameResult& out) {
  const auto t0 = monotonic_ns();
  SpokeRing::WindowTimes times;
  View<const cfloat> img;
  if (volume.backend() == Backend::Cuda && ring.on_device() && !volume.rotated()) {
    // The window stays on the GPU: gathered from the ring's mirror, sorted and turned along kz there; only
    // the spokes' headers come to the host. Its spokes stay held until the assembly has synchronized.
    const int R = host_frame.geometry.spokes;
    HeldWindow held{ring};
    img = volume.reconstruct_device(
        R,
        [&](cfloat* d_data, float* d_traj, gpu::StreamRef stream, std::vector<SpokeHeader>& heads) {
          if (!(held.on = ring.gather_window(end, R, d_data, d_traj, stream, times))) return false;
          for (int r = 0; r < R; ++r)
            heads.push_back(ring.info(end - std::uint64_t(R) + std::uint64_t(r)).head);
          return true;
        },
        [&] {
          // Released as soon as the window is sorted, not after the z positions' solves: held for a whole
          // volume, the ring filled past its margin and the ingest waited (V2's stream by CG-SENSE, 66 ms a
          // volume: the sender fell 15.2 s behind; 0.85 s with the early release).
          if (std::exchange(held.on, false)) ring.release_window();
        });
    if (!img.data && !volume.rotated()) return false;
  }
  if (!img.data) {
    // The CPU's ring, or a rotated stack (its volumes come from the window on the host: the first one found
    // rotated on the GPU comes here too). The GPU's ring needed no host frame until then.
    const Geometry& g = host_frame.geometry;
    if (host_frame.data.size() != std::size_t(g.coils) * std::size_t(g.spokes) * std::size_t(g.samples))
      host_frame = Frame(g);
    if (!ring.copy_window(end, host_frame, times)) return false;
    metrics_.add_stage("assemble", double(monotonic_ns() - t0) * 1e-6);
    img = volume.reconstruct(host_frame);
  }
  if (test_delay_ms_ > 0) std::this_thread::sleep_for(std::chrono::milliseconds(test_delay_ms_));
  out.ready_ns = monotonic_ns();
  out.image.assign(img.data, img.data + img.size());
  out.matrix = volume.plane().matrix;
  out.depth = volume.partitions();
  out.window = volume.plane().spokes;
  out.end_serial = end;
  out.first_spoke = volume.counts().first_step;
  out.last_spoke = volume.counts().last_step;
  out.missing = volume.counts().missing;
  out.last_acquired_ns = times.acquired_ns;
  out.last_arrival_ns = times.arrival_ns;
  if (out.missing > 0) {
    metrics_.volume_spokes_missing += std::uint64_t(out.missing);
    once_.warn(
        6, slice_prefix() + fmt::format("a volume's window lacks {} of its {} spokes (step and partition); "
                                        "they count as zeros (counted: volume_spokes_missing)",
                                        out.missing, volume.plane().spokes * volume.partitions()));
  }
  for (const auto& t : volume.timings()) metrics_.add_stage(t.stage, t.ms);
  out.make_ms = double(out.ready_ns - t0) * 1e-6;
  metrics_.add_stage("frame_total", out.make_ms);
  return true;
}

}  // namespace radstream
