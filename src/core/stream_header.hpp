// What a stream declares up front (the MRD XML header): matrix, samples, coils, readout oversampling, angle
// scheme.
#pragma once
#include <string>

#include "core/geometry.hpp"
#include "core/trajectory.hpp"

namespace radstream {

inline constexpr int kMaxPartitions = 1024;  // kz partitions of a stack of stars, at most

struct StreamHeader {
  int matrix = 256;
  int samples = 512;
  int coils = 8;
  float readout_os = 2.f;
  double fov_mm = 256.0;
  AngleSpec angles;
  double spoke_rate_hz = 0.0;  // nominal spokes per second (0 = unknown)
  // A stack of stars: kz partitions (encodedSpace.matrixSize.z, encodingLimits.kspace_encoding_step_2), each
  // spoke's in idx.kspace_encode_step_2; its frames are volumes [partitions][N][N]. 1: a 2D stream.
  int partitions = 1;
  // Empty: `angles` gives a spoke's angle from its number. Else what the header lacks for that (a scanner's
  // radial header without encodingLimits.kspace_encoding_step_1): a spoke with no trajectory is refused,
  // naming it.
  std::string angles_unknown;

  void validate() const;  // throws ConfigError naming the bad value
  Geometry geometry(int spokes) const { return {matrix, samples, spokes, coils, readout_os}; }
};

}  // namespace radstream
