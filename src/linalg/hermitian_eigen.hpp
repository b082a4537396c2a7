// Eigen-decomposition of a small Hermitian matrix (coil covariances, up to a few hundred rows) by cyclic
// Jacobi rotations in double precision: each rotation first turns the pivot's phase away, then zeroes it as
// the real symmetric Jacobi method does; sweeps until the off-diagonal part is below 1e-14 of the whole.
#pragma once
#include <complex>
#include <vector>

namespace radstream {

struct HermitianEigen {
  std::vector<double> values;                 // descending
  std::vector<std::complex<double>> vectors;  // [n][n] row-major: column k is the eigenvector of values[k]
};

// a: [n][n] row-major, Hermitian (only the upper triangle's conjugate symmetry is assumed, not checked).
// Throws InputError for a size that does not match or a value that is not finite.
HermitianEigen hermitian_eigen(std::vector<std::complex<double>> a, int n);

// The same result through LAPACK's divide-and-conquer solver (zheevd: Householder reduction to tridiagonal
// form, then divide and conquer), O(n^3) with a small constant: for the hundreds of rows of a calibration
// matrix's Gram matrix, where the Jacobi sweeps above take seconds. Each eigenvector's phase is LAPACK's.
// Throws InputError as above, and for a solver that does not converge.
HermitianEigen hermitian_eigen_lapack(std::vector<std::complex<double>> a, int n);

}  // namespace radstream
