// Coil compression by principal components (as `bart cc -p V` computes it on all the data given): the
// covariance C_ab = sum_p conj(x_a(p)) x_b(p) of the coils' samples, its eigenvectors by decreasing
// eigenvalue; virtual coil v is y_v(p) = sum_a x_a(p) U_av, the projection that keeps the most energy.
#pragma once
#include <complex>
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

// The two halves of it, for a backend that sums the covariance where the samples are
// (NlinvModel::covariance): C [coils][coils] row-major, C_ab = sum_p conj(x_a(p)) x_b(p), in double (host
// samples) ...
std::vector<std::complex<double>> coil_covariance(const cfloat* samples, int coils, std::size_t points);
// ... and the principal components of a covariance (the same errors as coil_compression).
CoilCompression compression_from_covariance(std::vector<std::complex<double>> cov, int coils,
                                            int virtual_coils);

}  // namespace radstream
