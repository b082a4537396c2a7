// BART's radial arrays <-> MRD files (`radstream convert --traj --kspace`, the Python module's read_mrd and
// write_mrd): trajectory [3 samples spokes] in BART units (+-N/2 for an N x N image) and k-space [1 samples
// spokes coils], one MRD acquisition per spoke with its own trajectory (cycles per pixel), its angle from the
// trajectory, acquisition times spaced at a rate, and the radstream envelope fields (so that `replay` paces
// it).
#pragma once
#include <string>

#include "core/frame.hpp"
#include "core/stream_header.hpp"
#include "io/cfl.hpp"

namespace radstream {

struct BartToMrd {
  double rate_hz = 100;  // spokes per second of the acquisition times
  double fov_mm = 256;   // for the viewer's scale bar
  int repeat = 1;        // the spokes written this many times, as one longer stream
};

// Writes the frame's spokes to `path` (.h5: MRD HDF5; .mrd: an MRD stream file). Returns the acquisitions
// written. Throws ConfigError for a bad rate or repeat (naming them), IoError for the file.
std::size_t write_frame_as_mrd(const std::string& path, const Frame& f, const BartToMrd& o);

// An MRD file's spokes [start, start + count) (count -1: all) as BART's arrays, with the stream's header.
struct MrdAsBart {
  CflArray traj;    // [3 samples spokes], BART units
  CflArray kspace;  // [1 samples spokes coils]
  StreamHeader header;
};
MrdAsBart read_mrd_as_bart(const std::string& path, long start = 0, long count = -1);

}  // namespace radstream
