// The radial ramp's density weight of one sample on the GPU: Ramp or RampDc (dc) for sample n of a spoke of S
// samples (spoke: its [S][2] coordinates) in a frame of P spokes, in double, rounded once to float (the CPU's
// compute_density_weights takes |k| by hypot: equal to float rounding). The weights kernel and the spread
// that computes the ramp as it stages each sample (SampleWeights) share it, so both give the same bits.
#pragma once
#include "core/math.hpp"
#include "noncart/density_weights.hpp"
#include "noncart/radial_geometry.hpp"

namespace radstream {

// Whether a method is one of the two ramps (the weight of a sample from its own spoke alone).
RADSTREAM_HD inline bool is_ramp(DcfMethod m) {
  return m == DcfMethod::Ramp || m == DcfMethod::RampDc;
}

RADSTREAM_HD inline float ramp_weight(bool dc, const float* spoke, int S, int n, int P) {
  const SpokeAxis a = spoke_axis(spoke, S);
  double r = sqrt(double(spoke[2 * n]) * spoke[2 * n] + double(spoke[2 * n + 1]) * spoke[2 * n + 1]);
  if (dc) r = fmax(r, a.spacing / 4);
  return float(kPi / P * a.spacing * r);
}

// How a spread weighs its samples: by an array of one weight a sample (density weights computed before, e.g.
// Voronoi's), or, with ramp Ramp or RampDc and no array, by the radial ramp computed from the trajectory
// ([spokes][samples][2]) as each sample is staged (no weights kernel, no weights array); else all 1.
struct SampleWeights {
  const float* array = nullptr;
  DcfMethod ramp = DcfMethod::None;
  int spokes = 0, samples = 0;

  SampleWeights(const float* weights = nullptr) : array(weights) {}  // NOLINT: a weights array converts
  SampleWeights(DcfMethod method, int spokes_, int samples_)
      : ramp(method), spokes(spokes_), samples(samples_) {}
  bool ramp_computed() const { return !array && is_ramp(ramp); }
};

}  // namespace radstream
