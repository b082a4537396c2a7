// A reconstruction chain: the stages of one method, configured once for a geometry, with the buffers between
// them allocated in configure(). reconstruct() runs one frame and allocates nothing.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/frame.hpp"
#include "pipeline/recon_params.hpp"
#include "pipeline/registry.hpp"

namespace radstream {

struct StageTiming {
  std::string stage;
  double ms = 0.0;
};

class ReconChain {
 public:
  ReconChain(const ReconParams& params, Backend backend, const Registry& registry);

  // Plans every stage for the geometry (slow: tables, FFT plans, buffers). Throws ConfigError.
  void configure(const Geometry& g);
  const Geometry& geometry() const { return g_; }
  bool configured() const { return configured_; }

  // Reconstructs one frame; returns the combined image [N][N] (magnitude in the real part).
  // Throws InputError when the frame does not match the configured geometry.
  View<const cfloat> reconstruct(const Frame& frame);
  // The per-coil images [coils][N][N] of the last frame.
  View<const cfloat> coil_images() const;
  // Wall time of each stage in the last frame.
  const std::vector<StageTiming>& timings() const { return timings_; }
  std::vector<std::string> stage_names() const;

 private:
  ReconParams params_;
  Context ctx_;
  std::vector<std::unique_ptr<Stage>> stages_;
  std::vector<HostBuffer<cfloat>> buffers_;  // owned outputs
  std::vector<int> output_of_;               // stage i writes buffers_[output_of_[i]]
  std::vector<StageTiming> timings_;
  Geometry g_;
  bool configured_ = false;
};

}  // namespace radstream
