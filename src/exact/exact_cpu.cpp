#include "exact/exact_cpu.hpp"

#include <cmath>
#include <numbers>

namespace radstream {

namespace {

// exp(+2 pi i p) with p reduced to [-0.5, 0.5] cycles first (as the kernels do).
template <class Real>
std::complex<Real> cis(Real p) {
  p -= std::nearbyint(p);
  const Real a = Real(2) * std::numbers::pi_v<Real> * p;
  return {std::cos(a), std::sin(a)};
}

template <class Real>
Real sinc(Real u) {
  if (u == Real(0)) return Real(1);
  const Real a = std::numbers::pi_v<Real> * u;
  return std::sin(a) / a;
}

// The model's pair term for sample i and voxel v: the phase (cycles) and the sinc weight.
template <class Real>
struct Pair {
  const ExactModel& m;
  bool field;
  Real r[3];  // voxel position
  std::size_t v;

  Pair(const ExactModel& mm, std::size_t vox) : m(mm), field(mm.has_field()), v(vox) {
    const auto& g = m.grid;
    const std::size_t i2 = v % g.n[2], i1 = (v / g.n[2]) % g.n[1], i0 = v / (std::size_t(g.n[2]) * g.n[1]);
    r[0] = Real(g.origin[0] + double(i0));
    r[1] = Real(g.origin[1] + double(i1));
    r[2] = Real(g.origin[2] + double(i2));
  }
  Real phase(std::size_t i) const {
    Real p = Real(m.k[0][i]) * r[0] + Real(m.k[1][i]) * r[1] + Real(m.k[2][i]) * r[2];
    if (field) p += Real(m.fm[v]) * Real(m.t[i]);
    return p;
  }
  Real weight(std::size_t i) const {
    if (!m.has_gradients()) return Real(1);
    Real w = Real(1);
    for (int a = 0; a < 3; ++a) w *= sinc(Real(m.k[a][i]) + Real(m.t[i]) * Real(m.g[a][v]));
    return w;
  }
};

// Sums of many terms, as the kernels do them: without a field, partial sums over blocks of this many samples
// or voxels (the kernels' tiles), then the blocks, which keeps float's rounding from growing with M; with a
// field every term is added in double (the field model's sums cancel heavily, and CG amplifies what float
// loses there: seed 001's case went from 1.8e-4 to 5e-6 against the double twin after 8 iterations).
constexpr std::size_t kBlock = 256;

template <class Real>
struct FieldSum {
  std::complex<double> s{};
  void add(const std::complex<Real>& t) { s += std::complex<double>(t); }
  std::complex<Real> value() const { return std::complex<Real>(s); }
};

}  // namespace

template <class Real>
void exact_adjoint_cpu(const ExactModel& m, const std::complex<Real>* d, std::complex<Real>* x) {
  const std::size_t M = m.samples(), V = m.voxels();
#pragma omp parallel for schedule(dynamic, 16)
  for (std::size_t v = 0; v < V; ++v) {
    const Pair<Real> p(m, v);
    if (p.field) {
      FieldSum<Real> sum;
      for (std::size_t i = 0; i < M; ++i) sum.add(d[i] * (p.weight(i) * cis(p.phase(i))));
      x[v] = sum.value();
      continue;
    }
    std::complex<Real> total{};
    for (std::size_t i0 = 0; i0 < M; i0 += kBlock) {
      std::complex<Real> part{};
      for (std::size_t i = i0; i < std::min(M, i0 + kBlock); ++i)
        part += d[i] * (p.weight(i) * cis(p.phase(i)));
      total += part;
    }
    x[v] = total;
  }
}

template <class Real>
void exact_forward_cpu(const ExactModel& m, const std::complex<Real>* x, std::complex<Real>* d) {
  const std::size_t M = m.samples(), V = m.voxels();
  std::vector<Pair<Real>> pairs;
  pairs.reserve(V);
  for (std::size_t v = 0; v < V; ++v) pairs.emplace_back(m, v);
#pragma omp parallel for schedule(dynamic, 16)
  for (std::size_t i = 0; i < M; ++i) {
    if (m.has_field()) {
      FieldSum<Real> sum;
      for (std::size_t v = 0; v < V; ++v)
        sum.add(x[v] * (pairs[v].weight(i) * std::conj(cis(pairs[v].phase(i)))));
      d[i] = sum.value();
      continue;
    }
    std::complex<Real> total{};
    for (std::size_t v0 = 0; v0 < V; v0 += kBlock) {
      std::complex<Real> part{};
      for (std::size_t v = v0; v < std::min(V, v0 + kBlock); ++v)
        part += x[v] * (pairs[v].weight(i) * std::conj(cis(pairs[v].phase(i))));
      total += part;
    }
    d[i] = total;
  }
}

template <class Real>
void exact_q_cpu(const ExactModel& m, const float* w, std::complex<Real>* q) {
  ExactModel qm;
  qm.grid = m.grid.q_grid();
  qm.k = m.k;
  const std::size_t M = m.samples();
  std::vector<std::complex<Real>> weights(M, std::complex<Real>(1));
  if (w)
    for (std::size_t i = 0; i < M; ++i) weights[i] = Real(w[i]);
  exact_adjoint_cpu<Real>(qm, weights.data(), q);
}

template <class Real>
void exact_matrix_cpu(const ExactModel& m, std::complex<Real>* g) {
  const std::size_t M = m.samples(), V = m.voxels();
#pragma omp parallel for schedule(static)
  for (std::size_t v = 0; v < V; ++v) {
    const Pair<Real> p(m, v);
    for (std::size_t i = 0; i < M; ++i) g[i * V + v] = p.weight(i) * std::conj(cis(p.phase(i)));
  }
}

template void exact_adjoint_cpu<float>(const ExactModel&, const std::complex<float>*, std::complex<float>*);
template void exact_adjoint_cpu<double>(const ExactModel&, const std::complex<double>*,
                                        std::complex<double>*);
template void exact_forward_cpu<float>(const ExactModel&, const std::complex<float>*, std::complex<float>*);
template void exact_forward_cpu<double>(const ExactModel&, const std::complex<double>*,
                                        std::complex<double>*);
template void exact_matrix_cpu<float>(const ExactModel&, std::complex<float>*);
template void exact_q_cpu<float>(const ExactModel&, const float*, std::complex<float>*);
template void exact_q_cpu<double>(const ExactModel&, const float*, std::complex<double>*);

ExactOperatorCpu::ExactOperatorCpu(const ExactModel& model)
    : LinearOperator(
          Extents{std::size_t(model.grid.n[0]), std::size_t(model.grid.n[1]), std::size_t(model.grid.n[2])},
          Extents{model.samples()}, Location::Host),
      m_(model.filled()) {}

void ExactOperatorCpu::forward(const cfloat* x, cfloat* y) {
  exact_forward_cpu<float>(m_, x, y);
}
void ExactOperatorCpu::adjoint(const cfloat* y, cfloat* x) {
  exact_adjoint_cpu<float>(m_, y, x);
}

}  // namespace radstream
