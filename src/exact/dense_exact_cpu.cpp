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

}  // namespace

std::size_t exact_matrix_bytes(const ExactModel& model) {
  const std::size_t V = model.voxels();
  return model.samples() * (V + V % 2) * sizeof(cfloat);
}

DenseExactOperatorCpu::DenseExactOperatorCpu(const ExactModel& model)
    : LinearOperator(
          Extents{std::size_t(model.grid.n[0]), std::size_t(model.grid.n[1]), std::size_t(model.grid.n[2])},
          Extents{model.samples()}, Location::Host),
      M_(model.samples()),
      V_(model.voxels()),
      g_(Extents{model.samples() * model.voxels()}),
      y_(model.samples()) {
  exact_matrix_cpu<float>(model.filled(), g_.data());
}

namespace {

template <class Y>
void gemv(const cfloat* g, std::size_t M, std::size_t V, const cfloat* x, Y* y) {
#pragma omp parallel for schedule(static)
  for (std::size_t i = 0; i < M; ++i) {
    const cfloat* row = g + i * V;
    cd s{};
    for (std::size_t v = 0; v < V; ++v) s += mul(row[v], x[v]);
    y[i] = Y(s);
  }
}

template <class Y>
void gemv_adjoint(const cfloat* g, std::size_t M, std::size_t V, const Y* y, cfloat* x) {
  const std::size_t tasks = (V + kColumns - 1) / kColumns;
#pragma omp parallel for schedule(static)
  for (std::size_t t = 0; t < tasks; ++t) {
    const std::size_t v0 = t * kColumns, n = std::min(kColumns, V - v0);
    cd acc[kColumns]{};
    for (std::size_t i = 0; i < M; ++i) {
      const cfloat* row = g + i * V + v0;
      const cd yi(y[i]);
      for (std::size_t j = 0; j < n; ++j) {  // conj(row[j]) y_i
        const double gr = row[j].real(), gi = row[j].imag();
        acc[j] += cd(gr * yi.real() + gi * yi.imag(), gr * yi.imag() - gi * yi.real());
      }
    }
    for (std::size_t j = 0; j < n; ++j) x[v0 + j] = cfloat(acc[j]);
  }
}

}  // namespace

void DenseExactOperatorCpu::forward(const cfloat* x, cfloat* y) {
  gemv(g_.data(), M_, V_, x, y);
}
void DenseExactOperatorCpu::adjoint(const cfloat* y, cfloat* x) {
  gemv_adjoint(g_.data(), M_, V_, y, x);
}

void DenseExactOperatorCpu::normal(const cfloat* x, cfloat* z) {
  gemv(g_.data(), M_, V_, x, y_.data());
  gemv_adjoint(g_.data(), M_, V_, y_.data(), z);
}

}  // namespace radstream
