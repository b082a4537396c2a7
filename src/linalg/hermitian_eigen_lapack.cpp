#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>

#include "core/error.hpp"
#include "linalg/hermitian_eigen.hpp"

// LAPACK's Fortran interface (liblapack-dev), with gfortran's hidden lengths of the character arguments.
extern "C" void zheevd_(const char* jobz, const char* uplo, const int* n, std::complex<double>* a,
                        const int* lda, double* w, std::complex<double>* work, const int* lwork,
                        double* rwork, const int* lrwork, int* iwork, const int* liwork, int* info,
                        std::size_t jobz_len, std::size_t uplo_len);

namespace radstream {

HermitianEigen hermitian_eigen_lapack(std::vector<std::complex<double>> a, int n) {
  using C = std::complex<double>;
  if (n < 1 || a.size() != std::size_t(n) * std::size_t(n))
    throw InputError("hermitian_eigen_lapack: " + std::to_string(a.size()) + " values for a " +
                     std::to_string(n) + " x " + std::to_string(n) + " matrix");
  for (const C& v : a)
    if (!std::isfinite(v.real()) || !std::isfinite(v.imag()))
      throw InputError("hermitian_eigen_lapack: the matrix holds a value that is not finite");
  // Row-major A is column-major A^T = conj(A) (A Hermitian): LAPACK sees conj(A), whose eigenvectors are the
  // conjugates of A's, with the same eigenvalues.
  std::vector<double> w(static_cast<std::size_t>(n));
  int info = 0, lwork = -1, lrwork = -1, liwork = -1, iwork_query = 0;
  C work_query;
  double rwork_query = 0;
  zheevd_("V", "U", &n, a.data(), &n, w.data(), &work_query, &lwork, &rwork_query, &lrwork, &iwork_query,
          &liwork, &info, 1, 1);
  if (info != 0)
    throw InputError("hermitian_eigen_lapack: zheevd's workspace query failed, info " + std::to_string(info));
  lwork = std::max(1, int(work_query.real()));
  lrwork = std::max(1, int(rwork_query));
  liwork = std::max(1, iwork_query);
  std::vector<C> work(static_cast<std::size_t>(lwork));
  std::vector<double> rwork(static_cast<std::size_t>(lrwork));
  std::vector<int> iwork(static_cast<std::size_t>(liwork));
  zheevd_("V", "U", &n, a.data(), &n, w.data(), work.data(), &lwork, rwork.data(), &lrwork, iwork.data(),
          &liwork, &info, 1, 1);
  if (info != 0)
    throw InputError("hermitian_eigen_lapack: zheevd did not converge (info " + std::to_string(info) + ")");
  HermitianEigen out;
  out.values.resize(std::size_t(n));
  out.vectors.resize(std::size_t(n) * n);
  for (int k = 0; k < n; ++k) {  // LAPACK's ascending order to descending; column k of the result
    const int src = n - 1 - k;
    out.values[std::size_t(k)] = w[std::size_t(src)];
    for (int i = 0; i < n; ++i) out.vectors[std::size_t(i) * n + k] = std::conj(a[std::size_t(src) * n + i]);
  }
  return out;
}

}  // namespace radstream
