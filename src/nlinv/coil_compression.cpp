#include "nlinv/coil_compression.hpp"

#include <fmt/format.h>

#include <complex>

#include "core/error.hpp"
#include "linalg/hermitian_eigen.hpp"

namespace radstream {

std::vector<std::complex<double>> coil_covariance(const cfloat* samples, int coils, std::size_t points) {
  using C = std::complex<double>;
  // Real and imaginary parts split once and summed in kLanes independent partial sums (which the compiler
  // may vectorize). On the host this is still milliseconds for 32 coils x 6656 samples; the CUDA model sums
  // on the device (NlinvModelCuda::covariance), since the first frame of a stream pays for it in its
  // deadline.
  constexpr std::size_t kLanes = 8;
  std::vector<double> re(std::size_t(coils) * points), im(re.size());
  for (std::size_t i = 0; i < re.size(); ++i) {
    re[i] = samples[i].real();
    im[i] = samples[i].imag();
  }
  std::vector<C> cov(std::size_t(coils) * coils, C{});
  const std::size_t body = points - points % kLanes;
  for (int a = 0; a < coils; ++a)
    for (int b = a; b < coils; ++b) {
      const double* ra = re.data() + std::size_t(a) * points;
      const double* ia = im.data() + std::size_t(a) * points;
      const double* rb = re.data() + std::size_t(b) * points;
      const double* ib = im.data() + std::size_t(b) * points;
      double sr[kLanes] = {}, si[kLanes] = {};
      for (std::size_t p = 0; p < body; p += kLanes)
        for (std::size_t q = 0; q < kLanes; ++q) {
          sr[q] += ra[p + q] * rb[p + q] + ia[p + q] * ib[p + q];
          si[q] += ra[p + q] * ib[p + q] - ia[p + q] * rb[p + q];
        }
      for (std::size_t p = body; p < points; ++p) {
        sr[0] += ra[p] * rb[p] + ia[p] * ib[p];
        si[0] += ra[p] * ib[p] - ia[p] * rb[p];
      }
      C s{};
      for (std::size_t q = 0; q < kLanes; ++q) s += C(sr[q], si[q]);
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
  if (virtual_coils < 1 || virtual_coils > coils)
    throw ConfigError(fmt::format("coil compression to {} virtual coils of {}", virtual_coils, coils));
  return compression_from_covariance(coil_covariance(samples, coils, points), coils, virtual_coils);
}

}  // namespace radstream
