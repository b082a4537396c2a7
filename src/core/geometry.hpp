// The shape of the work a reconstruction chain is configured for.
#pragma once
#include <string>

namespace radstream {

struct Geometry {
  int matrix = 256;        // reconstructed image is matrix x matrix
  int samples = 512;       // samples per spoke (readout oversampling x matrix, typically)
  int spokes = 256;        // spokes per frame
  int coils = 1;           // receive channels
  float readout_os = 2.f;  // readout oversampling (informational; k spans [-0.5, 0.5) regardless)

  void validate() const;  // throws ConfigError naming the bad value
  std::string str() const;
};

}  // namespace radstream
