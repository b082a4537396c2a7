// The geometry of radial spokes, shared by the stages that need it (FBP, density) and computed once per frame
// by the chain into the frame context: each spoke's line (direction, sample spacing, offset from k = 0)
// fitted from its trajectory, and its share of angle (half the gaps to its neighbours, angles mod pi).
#pragma once
#include <cmath>
#include <span>
#include <vector>

#include "gpu/handles.hpp"

namespace radstream {

#ifdef __CUDACC__
#define RADSTREAM_HD __host__ __device__
#else
#define RADSTREAM_HD
#endif

// A spoke's line, from its trajectory.
struct SpokeLine {
  float theta = 0;   // direction of increasing sample index (radians)
  float dk = 0;      // sample spacing (cycles/pixel)
  float kc = 0;      // k of sample S/2 (0 for a centred spoke)
  float weight = 0;  // share of angle (set by SpokeLineSet::fit)
};

// A spoke's axis from its end points: unit direction of increasing sample index and the mean sample spacing
// (cycles/pixel), in double. A spoke of zero length gets direction (1, 0) and spacing 0.
struct SpokeAxis {
  double dx = 1, dy = 0;
  double spacing = 0;
};

RADSTREAM_HD inline SpokeAxis spoke_axis(const float* t, int S) {
  SpokeAxis a;
  const double ex = double(t[2 * (S - 1)]) - t[0], ey = double(t[2 * (S - 1) + 1]) - t[1];
  const double len = sqrt(ex * ex + ey * ey);
  if (len > 0) {
    a.dx = ex / len;
    a.dy = ey / len;
    a.spacing = len / (S - 1);
  }
  return a;
}

// The line through samples t[0..S) ([S][2]): direction and spacing from the axis; the offset from the two
// ends' implied centres (exact for a straight, evenly sampled spoke), snapped to 0 below 1e-4 dk so that a
// centred spoke takes the fast path.
RADSTREAM_HD inline SpokeLine fit_spoke_line(const float* t, int S) {
  SpokeLine l;
  const SpokeAxis a = spoke_axis(t, S);
  if (!(a.spacing > 0)) return l;
  const double dx = a.dx, dy = a.dy, dk = a.spacing;
  const double first = t[0] * dx + t[1] * dy + (S / 2) * dk;
  const double last = t[2 * (S - 1)] * dx + t[2 * (S - 1) + 1] * dy - (S - 1 - S / 2) * dk;
  double kc = 0.5 * (first + last);
  if (fabs(kc) < 1e-4 * dk) kc = 0;
  l.theta = float(atan2(dy, dx));
  l.dk = float(dk);
  l.kc = float(kc);
  return l;
}

// Every spoke's line and its angular weight, from a frame's trajectory ([spokes][samples][2]). Sized once by
// resize() (in configure), so that fitting a frame allocates nothing.
class SpokeLineSet {
 public:
  void resize(int spokes);
  void fit(std::span<const float> traj, int samples);
  const std::vector<SpokeLine>& lines() const { return lines_; }

 private:
  std::vector<SpokeLine> lines_;
  std::vector<float> folded_;  // each line's angle mod pi
  std::vector<int> order_;     // spokes sorted by that angle
};

// The same on the GPU: every spoke's line and share of angle from d_traj ([spokes][samples][2] on the device)
// into d_lines, enqueued on `stream` (one block; up to kMaxDeviceSpokes spokes). CUDA builds only (else
// throws CudaError).
inline constexpr int kMaxDeviceSpokes = 12000;
void fit_spoke_lines_cuda(const float* d_traj, int spokes, int samples, SpokeLine* d_lines,
                          gpu::StreamRef stream);

}  // namespace radstream
