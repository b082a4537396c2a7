// Gradient delays of radial trajectories: estimated from the data by RING (Rosenzweig, Holme, Uecker, "Simple
// auto-calibrated gradient delay estimation from few spokes using Radial INtersections", MRM 81:1898, 2019)
// and applied to the trajectory before gridding or any iterative method.
//
// The delays are the triple BART's `traj -q x:y:xy` takes and `estdelay` prints, in readout samples: a spoke
// whose readout runs along the unit vector r (in BART's gradient frame) has every sample moved along r by
// r^T [[x, xy], [xy, y]] r (BART projects the delay onto the read direction). BART's gradient frame swaps the
// trajectory's first two components, so for a radstream spoke of direction (cos t, sin t) in (kx, ky) the
// shift is  y cos^2 t + x sin^2 t + 2 xy sin t cos t  samples (tested against `bart traj -q`).
//
// RING: two spokes that are not parallel still cross at k = 0, which a delay moves along each of them; the
// sample positions (t_i, t_j) where their multi-coil data agree best give the shifts -t_i and -t_j, and the
// shifts of every spoke pair (each spoke with the one nearest to orthogonal) fit the triple by least squares.
#pragma once
#include <complex>
#include <span>
#include <string>

namespace radstream {

struct GradientDelays {
  double x = 0, y = 0, xy = 0;  // BART's order and meaning (traj -q x:y:xy), in readout samples
  std::string str() const;      // "x:y:xy", as bart estdelay prints it
};

// "A:B:C" (three numbers); throws ConfigError naming `what` and the text.
GradientDelays parse_gradient_delays(const std::string& text, const std::string& what);

// The shift in samples along a spoke of direction (cos t, sin t) in radstream's (kx, ky).
double delay_along(const GradientDelays& d, double theta);

struct RingParams {
  double region = 3.0;  // |shift| searched, in samples
  double step = 0.005;  // the finest search step, samples
};

// traj [spokes][samples][2] (any units: the sample spacing is taken from it), data [coils][spokes][samples].
// Throws InputError when fewer than 2 non-parallel spokes or a spoke of length 0.
GradientDelays estimate_delays_ring(std::span<const float> traj, std::span<const std::complex<float>> data,
                                    int samples, int spokes, int coils, const RingParams& p = {});

// Moves each spoke of traj [spokes][samples][2] along itself by its delay (in its own sample spacing).
void apply_gradient_delays(std::span<float> traj, int samples, int spokes, const GradientDelays& d);

}  // namespace radstream
