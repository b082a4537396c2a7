// BART's .cfl/.hdr format: a text header "# Dimensions" with up to 16 extents (first fastest) and a raw file
// of little-endian complex64 values. Paths may be given with or without the .cfl/.hdr extension.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.hpp"

namespace radstream {

struct CflArray {
  std::vector<long> dims;  // BART order: dims[0] varies fastest; trailing 1s kept as read
  std::vector<cfloat> data;

  long dim(int i) const { return i < int(dims.size()) ? dims[i] : 1; }
  // Extents with singleton dimensions removed, fastest first.
  std::vector<long> squeezed() const;
};

// Default limit on the number of elements a file may declare (2^30 complex values, 8 GiB).
inline constexpr std::size_t kCflMaxElements = std::size_t(1) << 30;

// Reads base.hdr and base.cfl. Throws IoError naming the file and the problem (missing, malformed header,
// absurd or too large dimensions, truncated or oversized data).
CflArray read_cfl(const std::string& path, std::size_t max_elements = kCflMaxElements);
void write_cfl(const std::string& path, const std::vector<long>& dims, std::span<const cfloat> data);
std::string cfl_base(const std::string& path);

}  // namespace radstream
