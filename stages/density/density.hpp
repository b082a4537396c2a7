// Density compensation: weights each sample by the area of k-space it represents
// (noncart/density_weights.hpp) in a pass over every coil's samples.
#pragma once
#include <memory>

#include "noncart/density_weights.hpp"
#include "stage/stage.hpp"

namespace radstream {

struct DensityParams {
  DcfMethod method = DcfMethod::RampDc;

  template <class V>
  void visit(V& v) {
    v.choice("dcf", method, kDcfMethods, "density compensation");
  }
};

// Memory (StageSizes): nothing of its own; its output, the weighted samples, is the frame's size, which the
// chain's frame copies count.
inline double density_bytes(const StageSizes&) {
  return 0;
}

std::unique_ptr<Stage> make_density_cpu(const DensityParams& p);
std::unique_ptr<Stage> make_density_cuda(const DensityParams& p);  // CUDA builds only

}  // namespace radstream
