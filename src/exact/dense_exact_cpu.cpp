#include <algorithm>
#include <complex>

#include "exact/dense_exact.hpp"
#include "exact/exact_cpu.hpp"

namespace radstream {

namespace {

constexpr std::size_t kColumns = 64;  // the adjoint's voxels per task: a row's slice stays in cache
using cd = std::complex<double>;

// Products of the float entries in double (exact), without the library's NaN/Inf recovery (all finite).
inline cd mul(cfloat a, cfloat b) {
  const double ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return {ar * br - ai * bi, ar * bi + ai * br};
}
inline cd mul_conj(cfloat a, cfloat b) {  // conj(a) b
  const double ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
  return {ar * br + ai * bi, ar * bi - ai * br};
}

}  // namespace

std::size_t exact_matrix_bytes(const ExactModel& model) {
  const std::size_t V = model.voxels();
  return model.samples() * (V + V % 2) * sizeof(cfloat);
}

DenseExactOperatorCpu::DenseExactOperatorCpu(const ExactModel& model)
    : LinearOperator(Extents{std::size_t(model.grid.n[0]), std::size_t(model.grid.n[1]), std::size_t(model.grid.n[2])},
                     Extents{model.samples()}, Location::Host),
      M_(model.samples()),
      V_(model.voxels()),
      g_(Extents{model.samples() * model.voxels()}) {
  exact_matrix_cpu<float>(model.filled(), g_.data());
}

void DenseExactOperatorCpu::forward(const cfloat* x, cfloat* y) {
  const cfloat* g = g_.data();
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < M_; ++i) {
    const cfloat* row = g + i * V_;
    cd s{};
    for (std::size_t v = 0; v < V_; ++v) s += mul(row[v], x[v]);
    y[i] = cfloat(s);
  }
}

void DenseExactOperatorCpu::adjoint(const cfloat* y, cfloat* x) {
  const cfloat* g = g_.data();
  const std::size_t tasks = (V_ + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static)
  for (std::size_t t = 0; t < tasks; ++t) {
    const std::size_t v0 = t * kColumns, n = std::min(kColumns, V_ - v0);
    cd acc[kColumns]{};
    for (std::size_t i = 0; i < M_; ++i) {
      const cfloat* row = g + i * V_ + v0;
      for (std::size_t j = 0; j < n; ++j) acc[j] += mul_conj(row[j], y[i]);
    }
    for (std::size_t j = 0; j < n; ++j) x[v0 + j] = cfloat(acc[j]);
  }
}

}  // namespace radstream
