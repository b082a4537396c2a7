// One reconstructed frame and its trace, as the runtime hands it to the sinks and the viewer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.hpp"

namespace radstream {

struct FrameResult {
  std::uint64_t number = 0;  // per slice, from 1
  int slice = 0;             // the stream's slice (MRD idx.slice)
  std::string session;       // the protocol session it belongs to ("session 3"); empty: the runtime's stream
  int matrix = 0;
  // A stack of stars' frame is a volume of `depth` z positions; 1: a 2D frame.
  int depth = 1;
  // [depth][N][N], magnitude in the real part (coil k's magnitude in coil view)
  std::vector<cfloat> image;
  // [N][N] with its phase when the reconstruction keeps it (ReconParams::keep_phase: complex MRD images) and
  // the frame is the combined image; else empty.
  std::vector<cfloat> complex_image;
  int coil = -1;                                  // -1: combined; else the coil shown
  std::uint64_t first_spoke = 0, last_spoke = 0;  // spoke indices (in-plane steps of a volume)
  int missing = 0;  // a volume: spokes of its window (step and partition) that never came (zeros)
  std::uint64_t end_serial = 0;  // ring serial after the last spoke
  int window = 0;
  std::int64_t last_acquired_ns = 0, last_arrival_ns = 0, ready_ns = 0;
  double make_ms = 0;     // assembling and reconstructing it
  int iterations = -1;    // cg-sense: CG iterations of this frame (-1: not iterative)
  double residual = 0.0;  // cg-sense: final relative residual
};

}  // namespace radstream
