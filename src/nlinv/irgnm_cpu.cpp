#include "nlinv/irgnm_cpu.hpp"

#include <cmath>
#include <cstring>

namespace radstream {

namespace {

double norm2(const cfloat* a, std::size_t n) {
  double s = 0;
#pragma omp parallel for reduction(+ : s)
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) s += std::norm(std::complex<double>(a[i]));
  return s;
}

double real_dot(const cfloat* a, const cfloat* b, std::size_t n) {
  double s = 0;
#pragma omp parallel for reduction(+ : s)
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i)
    s += double(a[i].real()) * b[i].real() + double(a[i].imag()) * b[i].imag();
  return s;
}

}  // namespace

IrgnmCpu::IrgnmCpu(NlinvModelCpu& model)
    : model_(model),
      r_data_(Extents{model.data_size()}),
      b_(Extents{model.unknowns()}),
      h_(Extents{model.unknowns()}),
      r_(Extents{model.unknowns()}),
      p_(Extents{model.unknowns()}),
      ap_(Extents{model.unknowns()}) {}

int IrgnmCpu::cg(double alpha, int max_iter, cfloat* h, const cfloat* b) {
  const std::size_t n = model_.unknowns();
  std::memset(static_cast<void*>(h), 0, n * sizeof(cfloat));
  std::memcpy(static_cast<void*>(r_.data()), b, n * sizeof(cfloat));  // r = b - A 0
  std::memcpy(static_cast<void*>(p_.data()), b, n * sizeof(cfloat));
  const double b_norm = std::sqrt(norm2(b, n));
  const double eps = std::pow(0.1 * b_norm, 2);  // BART's legacy rule: ||r|| <= (cgtol ||b||)^2
  double rs_old = b_norm * b_norm;
  if (rs_old == 0) return 0;
  int it = 0;
  while (it < max_iter) {
    model_.normal(p_.data(), ap_.data());
    const float a_f = float(alpha);
#pragma omp parallel for
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) ap_[std::size_t(i)] += a_f * p_[std::size_t(i)];
    const double pap = real_dot(p_.data(), ap_.data(), n);
    ++it;
    if (pap == 0) break;
    const float step = float(rs_old / pap);
#pragma omp parallel for
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) {
      h[i] += step * p_[std::size_t(i)];
      r_[std::size_t(i)] -= step * ap_[std::size_t(i)];
    }
    const double rs_new = norm2(r_.data(), n);
    const float beta = float(rs_new / rs_old);
    rs_old = rs_new;
    if (rs_new <= eps * eps) break;
#pragma omp parallel for
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i)
      p_[std::size_t(i)] = r_[std::size_t(i)] + beta * p_[std::size_t(i)];
  }
  return it;
}

IrgnmReport IrgnmCpu::solve(const NlinvParams& p, cfloat* x, const cfloat* x_ref, const cfloat* y) {
  IrgnmReport rep;
  const std::size_t n = model_.unknowns(), m = model_.data_size();
  double alpha = 1.0;
  for (int step = 0; step < p.newton; ++step) {
    model_.linearize(x);
    model_.value(r_data_.data());
#pragma omp parallel for
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(m); ++i)
      r_data_[std::size_t(i)] = y[i] - r_data_[std::size_t(i)];
    rep.final_residual = std::sqrt(norm2(r_data_.data(), m));
    model_.derivative_adjoint(r_data_.data(), b_.data());
    const float a_f = float(alpha);
#pragma omp parallel for
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i)
      b_[std::size_t(i)] += a_f * ((x_ref ? x_ref[i] : cfloat{}) - x[i]);
    rep.cg_iterations += cg(alpha, p.newton_cg_max, h_.data(), b_.data());
#pragma omp parallel for
    for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) x[i] += h_[std::size_t(i)];
    alpha = (alpha - p.alpha_min) / p.alpha_reduction + p.alpha_min;
    ++rep.newton_steps;
  }
  model_.linearize(x);  // the coil images of the solution, for the output
  return rep;
}

}  // namespace radstream
