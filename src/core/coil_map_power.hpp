// The peak power of coil maps, max over pixels of sum_c |S_c|^2: the largest diagonal entry of E^H E per unit
// sample weight, the scale a relative Tikhonov weight refers to (the chain's cg_sense stage, the coil split).
#pragma once
#include <algorithm>
#include <complex>
#include <cstddef>

namespace radstream {

// maps [coils][pixels].
inline double coil_map_peak_power(const std::complex<float>* maps, std::size_t coils, std::size_t pixels) {
  double peak = 0;
  for (std::size_t p = 0; p < pixels; ++p) {
    double s = 0;
    for (std::size_t c = 0; c < coils; ++c) s += std::norm(maps[c * pixels + p]);
    peak = std::max(peak, s);
  }
  return peak;
}

// maps [partitions][coils][pixels] (a volume's, one block per partition): the largest of the partitions'.
inline double volume_map_peak_power(const std::complex<float>* maps, std::size_t partitions,
                                    std::size_t coils, std::size_t pixels) {
  double peak = 0;
  for (std::size_t z = 0; z < partitions; ++z)
    peak = std::max(peak, coil_map_peak_power(maps + z * coils * pixels, coils, pixels));
  return peak;
}

}  // namespace radstream
