// The IMPATIENT toolkit's data files (seed 001; ../shared/data/impatient/README.md), read-only:
//   version 0.2: a 20-byte little-endian header (float32 0.2, int32 rows, coils, slices, data size) and the
//                float32 values;
//   version 1.0: a text header ("version = 1.000000", "xDimension = 64", ..., "file_size = n"), then per coil
//                "// Coil No. k", "Binary_Size = n", "Binary:" and n float32 values.
// Every count is checked against the file's length; a bad file throws IoError naming the file and the field.
#pragma once
#include <array>
#include <string>
#include <vector>

namespace radstream {

struct ImpatientArray {
  std::vector<float> values;  // all coils, one after the other
  int coils = 1;
  std::array<int, 3> dims{0, 0, 0};  // x, y, z from a version 1.0 header (0 when the file does not say)
};

ImpatientArray read_impatient_array(const std::string& path);

// One case of a folder (kx, ky, kz, t, kdata_r/_i, ix, iy, iz, fm, fmgx/y/z, mask, sensi_r/_i; the gradients,
// field map, mask and sensitivities are optional). Sizes are checked against each other.
struct ImpatientCase {
  std::string dir;
  std::size_t samples = 0, voxels = 0;
  int coils = 1;
  std::array<int, 3> dims{0, 0, 0};  // x, y, z when a header says so
  std::vector<float> kx, ky, kz, t, ix, iy, iz, fm, gx, gy, gz, mask;
  std::vector<float> kdata_r, kdata_i;  // coils * samples
  std::vector<float> sens_r, sens_i;    // coils * voxels (empty when absent)
};

ImpatientCase read_impatient_case(const std::string& dir);

}  // namespace radstream
