#include "nlinv/coil_compression.hpp"

#include <fmt/format.h>

#include <complex>

#include "core/error.hpp"
#include "linalg/hermitian_eigen.hpp"

namespace radstream {

std::vector<std::complex<double>> coil_covariance(const cfloat* samples, int coils, std::size_t points) {
  using C = std::complex<double>;
  // (The CUDA model sums it on the device, NlinvModelCuda::covariance: the first frame of a stream pays for
  // it inside its deadline.)
  std::vector<C> cov(std::size_t(coils) * coils, C{});
  for (int a = 0; a < coils; ++a)
    for (int b = a; b < coils; ++b) {
      C s{};
      const cfloat* xa = samples + std::size_t(a) * points;
      const cfloat* xb = samples + std::size_t(b) * points;
      for (std::size_t p = 0; p < points; ++p) s += std::conj(C(xa[p])) * C(xb[p]);
      cov[std::size_t(a) * coils + b] = s;
      cov[std::size_t(b) * coils + a] = std::conj(s);
    }
  return cov;
}

CoilCompression compression_from_covariance(std::vector<std::complex<double>> cov, int coils,
                                            int virtual_coils) {
  if (virtual_coils < 1 || virtual_coils > coils)
    throw ConfigError(fmt::format("coil compression to {} virtual coils of {}", virtual_coils, coils));
  if (cov.size() != std::size_t(coils) * coils)
    throw InputError(
        fmt::format("coil compression: a covariance of {} values for {} coils", cov.size(), coils));
  double total = 0;
  for (int a = 0; a < coils; ++a) total += cov[std::size_t(a) * coils + a].real();
  if (!(total > 0) || !std::isfinite(total))
    throw InputError("coil compression: the samples carry no energy (or values that are not finite)");
  const HermitianEigen e = hermitian_eigen(std::move(cov), coils);
  CoilCompression cc;
  cc.coils = coils;
  cc.virtual_coils = virtual_coils;
  cc.matrix.resize(std::size_t(coils) * virtual_coils);
  double kept = 0;
  for (int v = 0; v < virtual_coils; ++v) {
    kept += e.values[std::size_t(v)];
    for (int a = 0; a < coils; ++a)
      cc.matrix[std::size_t(a) * virtual_coils + v] = cfloat(e.vectors[std::size_t(a) * coils + v]);
  }
  cc.kept_energy = kept / total;
  return cc;
}

CoilCompression coil_compression(const cfloat* samples, int coils, std::size_t points, int virtual_coils) {
  return compression_from_covariance(coil_covariance(samples, coils, points), coils, virtual_coils);
}

}  // namespace radstream
