// Frames from files and images to files: the glue between the readers/writers and the reconstruction chain.
#pragma once
#include <span>
#include <string>
#include <vector>

#include "core/frame.hpp"
#include "core/stream_header.hpp"
#include "io/cfl.hpp"

namespace radstream {

// A frame from BART arrays: traj [3 samples spokes] in BART units (+-N/2 for an N x N image) and k-space
// whose non-singleton dimensions are [samples spokes] or [samples spokes coils] (BART's [1 S P C], or [S P 1
// C]). Throws IoError naming the files and the sizes that disagree.
Frame frame_from_bart(const CflArray& traj, const CflArray& kspace, int matrix, const std::string& what);

// A frame from recorded spokes (all of the same size as the header says).
// Coil maps from BART's layout [N N 1 coils] (ESPIRiT's [N N 1 coils maps]: the first set) into radstream's
// [coils][N][N] (same memory order). Throws IoError naming the file when the extents do not match.
HostBuffer<cfloat> read_coil_maps(const std::string& path, int matrix, int coils);

// Throws ConfigError unless `path` ends in .cfl or .png, and IoError unless its folder exists.
void check_image_output(const std::string& path);

Frame frame_from_spokes(const StreamHeader& h, std::span<const Spoke> spokes);

// Writes a combined image [N][N] (magnitude in the real part): .cfl as [N N] complex, .png as 8-bit grey
// windowed to the 0.5th..99.5th percentiles. Throws ConfigError for other extensions, IoError on write
// failure.
void write_image(const std::string& path, std::span<const cfloat> image, int matrix);

// Writes a volume [depth][N][N]: .cfl as BART [N N depth], .png as its z positions tiled row by row (z = 0
// top left), windowed over the whole volume. Throws as write_image.
void write_volume(const std::string& path, std::span<const cfloat> volume, int matrix, int depth);

// The magnitudes of a complex image.
std::vector<float> magnitude(std::span<const cfloat> image);

}  // namespace radstream
