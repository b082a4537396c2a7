// The shape of the work a reconstruction chain is configured for.
#pragma once
#include <string>

namespace radstream {

struct Geometry {
  int matrix = 256;        // reconstructed image is matrix x matrix
  int samples = 512;       // samples per spoke (readout oversampling x matrix, typically)
  int spokes = 256;        // spokes per frame
  int coils = 1;           // receive channels (of every image together when images > 1)
  float readout_os = 2.f;  // readout oversampling (informational; k spans [-0.5, 0.5) regardless)
  // Images that share the trajectory and are reconstructed side by side (a volume's z positions): the data's
  // channels are [images][coils / images], every stage that works per channel takes them as one batch and
  // a coil combination gives [images][N][N]. 1: one image of `coils` channels, [N][N].
  int images = 1;

  int coils_per_image() const { return coils / images; }
  void validate() const;  // throws ConfigError naming the bad value
  std::string str() const;
};

}  // namespace radstream
