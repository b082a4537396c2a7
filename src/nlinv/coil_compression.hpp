// Coil compression by principal components (as `bart cc -p V` computes it on all the data given): the
// covariance C_ab = sum_p conj(x_a(p)) x_b(p) of the coils' samples, its eigenvectors by decreasing
// eigenvalue; virtual coil v is y_v(p) = sum_a x_a(p) U_av, the projection that keeps the most energy.
#pragma once
#include <cstddef>
#include <vector>

#include "core/buffer.hpp"

namespace radstream {

struct CoilCompression {
  int coils = 0, virtual_coils = 0;
  std::vector<cfloat> matrix;  // [coils][virtual_coils]: y_v = sum_a x_a matrix[a][v]
  double kept_energy = 0;      // share of the samples' energy the virtual coils keep (0..1)
};

// samples [coils][points] (host). Throws InputError when the samples carry no energy or are not finite.
CoilCompression coil_compression(const cfloat* samples, int coils, std::size_t points, int virtual_coils);

}  // namespace radstream
