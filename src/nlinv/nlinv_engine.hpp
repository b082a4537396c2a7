// One stream's NLINV, whatever the backend: the per-frame call the nlinv stage and the offline job make.
// NlinvCpu (host arrays) and NlinvCuda (device arrays, the caller's stream) implement it.
#pragma once
#include "core/buffer.hpp"
#include "iter/irgnm.hpp"

namespace radstream {

struct NlinvFrameReport {
  IrgnmReport irgnm;
  double scaling = 0;  // the stream's data scale (100 / ||y|| of the first frame)
  double ms = 0;       // the frame's wall time, gridding to image (all work done)
};

class NlinvEngine {
 public:
  virtual ~NlinvEngine() = default;
  // traj [points][2] in cycles per pixel of the N x N image; samples [coils][points]; out [N*N]; all at the
  // engine's location.
  virtual NlinvFrameReport reconstruct(const float* traj, const cfloat* samples, cfloat* out) = 0;
  // A new stream: the next frame starts from rho = 1, c = 0 with no reference and a new data scale.
  virtual void reset() = 0;
};

}  // namespace radstream
