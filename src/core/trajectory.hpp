// Radial trajectories. Inside the pipeline a k-space coordinate is in cycles per pixel of the reconstructed
// matrix: every spoke spans [-0.5, 0.5) whatever its readout oversampling, which only makes the samples
// denser.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "core/math.hpp"

namespace radstream {

enum class AngleScheme {
  Linear180,   // pi / P spacing: P spokes cover 180 degrees
  Linear360,   // 2 pi / P spacing: P spokes cover 360 degrees
  Golden,      // 180 deg / phi = 111.246 deg
  TinyGolden,  // 180 deg / (phi + N - 1), N = 2..10
  Turns,       // real-time radial MRI's turns (BART's traj -r -t T): frame f of S spokes at
               // pi (j + (f mod T) / T) / S, j = 0..S-1, S = spokes_per_rotation
};

AngleScheme parse_angle_scheme(const std::string& name);  // linear180|linear360|golden|tiny-golden|turns
std::string to_string(AngleScheme s);

// How spoke angles are generated.
struct AngleSpec {
  AngleScheme scheme = AngleScheme::Golden;
  int tiny_n = 5;                 // order of the tiny golden angle, 2..10
  int spokes_per_rotation = 256;  // P for the linear schemes; S, the spokes of a frame, for turns
  int turns = 5;                  // T for turns

  void validate() const;                         // throws ConfigError naming the bad value
  double increment() const;                      // radians between consecutive spokes (of a frame: turns)
  double angle(std::int64_t spoke_index) const;  // radians, in [0, 2 pi)
};

inline constexpr double kGoldenRatio = 1.6180339887498948482;

// k (cycles/pixel) of sample n of a spoke with `samples` samples: (n - samples/2) / samples, so that the
// spoke spans [-0.5, 0.5) for any readout oversampling; the centre k = 0 is sample samples/2.
inline double radial_position(int n, int samples) {
  return (static_cast<double>(n) - samples / 2) / static_cast<double>(samples);
}

// Writes samples x (kx, ky) of a spoke at `angle` (radians; direction (cos, sin)) into out (2 * samples
// floats).
void spoke_coordinates(double angle, int samples, std::span<float> out);

}  // namespace radstream
