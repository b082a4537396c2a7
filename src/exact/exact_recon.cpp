#include "exact/exact_recon.hpp"

#include <chrono>
#include <cmath>
#include <memory>

#include "core/error.hpp"
#include "exact/dense_exact.hpp"
#include "exact/exact_cpu.hpp"
#include "exact/exact_cuda.hpp"
#include "exact/toeplitz_normal.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"
#include "iter/conjugate_gradient.hpp"
#include "linalg/csr_matrix.hpp"
#include "linalg/vector_ops.hpp"

namespace radstream {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void check_options(const ExactModel& model, const std::vector<cfloat>& kdata, int coils,
                   const ExactReconOptions& o) {
  model.validate();
  if (coils < 1) throw ConfigError("exact recon: coils " + std::to_string(coils) + " must be >= 1");
  if (kdata.size() != model.samples() * std::size_t(coils))
    throw InputError("exact recon: " + std::to_string(kdata.size()) + " k-space values for " +
                     std::to_string(coils) + " coils of " + std::to_string(model.samples()) + " samples");
  if (o.method == ExactMethod::Cg && o.iterations < 1)
    throw ConfigError("exact recon: iterations " + std::to_string(o.iterations) + " must be >= 1");
  if (!(o.lambda >= 0) || !std::isfinite(o.lambda))
    throw ConfigError("exact recon: lambda " + std::to_string(o.lambda) + " must be finite and >= 0");
  if (o.fast_math && !o.gpu) throw ConfigError("exact recon: --fast-math needs the GPU backend (cuda)");
  if (!o.regions.empty() && o.regions.size() != model.voxels())
    throw InputError("exact recon: " + std::to_string(o.regions.size()) + " region labels for " +
                     std::to_string(model.voxels()) + " voxels");
  if (!o.weights.empty()) {
    if (o.weights.size() != model.samples())
      throw InputError("exact recon: " + std::to_string(o.weights.size()) + " sample weights for " +
                       std::to_string(model.samples()) + " samples");
    for (std::size_t i = 0; i < o.weights.size(); ++i)
      if (!std::isfinite(o.weights[i]) || o.weights[i] < 0)
        throw InputError("exact recon: sample weight " + std::to_string(i) + " = " +
                         std::to_string(o.weights[i]) + " must be finite and >= 0");
    if (o.method == ExactMethod::Cg && (model.has_field() || !o.toeplitz))
      throw ConfigError(
          "exact recon: sample weights need the Toeplitz normal operator (no field map or gradients)");
  }
}

// One coil's data times the sample weights (when there are any).
const cfloat* weighted(const std::vector<cfloat>& kdata, std::size_t at, std::size_t M,
                       const std::vector<float>& w, std::vector<cfloat>& scratch) {
  if (w.empty()) return kdata.data() + at;
  scratch.resize(M);
  for (std::size_t i = 0; i < M; ++i) scratch[i] = kdata[at + i] * w[i];
  return scratch.data();
}

void accumulate_rss(std::vector<double>& rss, const cfloat* x, std::size_t V) {
  for (std::size_t v = 0; v < V; ++v) rss[v] += double(std::norm(x[v]));
}

// The result: one coil's complex image or the coils' RSS, with the iteration report and the phase times.
struct PhaseTimes {
  double fhd = 0, q = 0, cg = 0, matrix = 0;
};

// C: first differences, across the whole grid or within the anatomical prior's regions.
CsrMatrix regularizer(const ExactModel& model, const ExactReconOptions& o) {
  return finite_difference_csr(model.grid.n, o.regions.empty() ? nullptr : &o.regions);
}

// CG applies F then F^H (no Toeplitz form) and the stored matrix fits the limit.
bool use_matrix(const ExactModel& model, const ExactReconOptions& o) {
  const bool direct_normal = model.has_field() || !o.toeplitz;
  return o.method == ExactMethod::Cg && direct_normal && o.matrix_limit_mb > 0 &&
         exact_matrix_bytes(model) <= o.matrix_limit_mb * (std::size_t(1) << 20);
}

ExactReconResult finish(std::vector<double>& rss, std::vector<cfloat>& single, int coils, bool cg,
                        const CgReport& rep, const PhaseTimes& ms, Clock::time_point t_all) {
  ExactReconResult r;
  r.iterations = cg ? rep.iterations : 0;
  r.residual = rep.residual;
  r.fhd_ms = ms.fhd;
  r.q_ms = ms.q;
  r.cg_ms = ms.cg;
  r.matrix_ms = ms.matrix;
  r.matrix = ms.matrix > 0;
  r.total_ms = ms_since(t_all);
  r.coils = coils;
  if (coils == 1) {
    r.image = std::move(single);
  } else {
    r.image.resize(rss.size());
    for (std::size_t v = 0; v < rss.size(); ++v) r.image[v] = cfloat(float(std::sqrt(rss[v])), 0.0f);
  }
  return r;
}

ExactReconResult reconstruct_cpu(const ExactModel& model, const std::vector<cfloat>& kdata, int coils,
                                 const ExactReconOptions& o) {
  const auto t_all = Clock::now();
  const std::size_t M = model.samples(), V = model.voxels();
  std::shared_ptr<LinearOperator> op = std::make_shared<ExactOperatorCpu>(model);
  std::shared_ptr<LinearOperator> normal = op;
  double q_ms = 0, matrix_ms = 0;
  if (use_matrix(model, o)) {
    const auto t = Clock::now();
    op = normal = std::make_shared<DenseExactOperatorCpu>(model);
    matrix_ms = std::max(1e-6, ms_since(t));
  }
  const bool cg = o.method == ExactMethod::Cg;
  if (cg && o.toeplitz && !model.has_field()) {
    const auto t = Clock::now();
    std::vector<cfloat> q(model.grid.q_grid().voxels());
    exact_q_cpu<float>(model.filled(), o.weights.empty() ? nullptr : o.weights.data(), q.data());
    normal = std::make_shared<ToeplitzNormalCpu>(op, model.grid, q.data());
    q_ms = ms_since(t);
  }
  std::unique_ptr<CsrOperatorCpu> reg;
  if (cg) reg = std::make_unique<CsrOperatorCpu>(regularizer(model, o), op->domain());
  auto ops = make_vector_ops_cpu();
  ConjugateGradient solver(V, *ops);
  std::vector<cfloat> b(V), x(V), scratch;
  std::vector<double> rss(V, 0.0);
  double fhd_ms = 0, cg_ms = 0;
  CgReport rep;
  for (int c = 0; c < coils; ++c) {
    const cfloat* data = weighted(kdata, std::size_t(c) * M, M, o.weights, scratch);
    auto t = Clock::now();
    op->adjoint(data, b.data());
    fhd_ms += ms_since(t);
    if (cg) {
      t = Clock::now();
      CgOptions co;
      co.max_iterations = o.iterations;
      co.mu = o.lambda * double(M);
      rep = solver.solve(*normal, b.data(), x.data(), co, false, reg.get());
      cg_ms += ms_since(t);
    } else {
      x = b;
    }
    accumulate_rss(rss, x.data(), V);
  }
  return finish(rss, x, coils, cg, rep, {fhd_ms, q_ms, cg_ms, matrix_ms}, t_all);
}

#if RADSTREAM_HAVE_CUDA
ExactReconResult reconstruct_gpu(const ExactModel& model, const std::vector<cfloat>& kdata, int coils,
                                 const ExactReconOptions& o) {
  const auto t_all = Clock::now();
  gpu::Stream stream;
  const auto s = stream.get();
  const std::size_t M = model.samples(), V = model.voxels();
  auto op = std::make_shared<ExactOperatorCuda>(model, o.fast_math, s);
  const bool cg = o.method == ExactMethod::Cg;
  DeviceBuffer<cfloat> d_data(Extents{M}), d_b(Extents{V}), d_x(Extents{V});
  std::shared_ptr<LinearOperator> normal = op, adj = op;
  double q_ms = 0, matrix_ms = 0;
  if (use_matrix(model, o)) {
    auto dense = std::make_shared<DenseExactOperatorCuda>(*op, false);  // allocation is set-up, as the plans
    gpu::synchronize(s);
    const auto t = Clock::now();
    dense->compute();
    gpu::synchronize(s);
    matrix_ms = std::max(1e-6, ms_since(t));
    adj = normal = dense;
  }
  if (cg && o.toeplitz && !model.has_field()) {
    const auto t = Clock::now();
    DeviceBuffer<cfloat> d_q(Extents{model.grid.q_grid().voxels()});
    DeviceBuffer<float> d_w(Extents{o.weights.size()});
    if (!o.weights.empty())
      gpu::copy_to_device(d_w.data(), o.weights.data(), o.weights.size() * sizeof(float), s);
    op->q(o.weights.empty() ? nullptr : d_w.data(), d_q.data());
    normal = std::make_shared<ToeplitzNormalCuda>(op, model.grid, d_q.data(), s);
    gpu::synchronize(s);
    q_ms = ms_since(t);
  }
  std::unique_ptr<CsrOperatorCuda> reg;
  if (cg) reg = std::make_unique<CsrOperatorCuda>(regularizer(model, o), op->domain(), s);
  auto ops = make_vector_ops_cuda(s);
  ConjugateGradient solver(V, *ops);
  std::vector<cfloat> x(V), scratch;
  std::vector<double> rss(V, 0.0);
  double fhd_ms = 0, cg_ms = 0;
  CgReport rep;
  for (int c = 0; c < coils; ++c) {
    const cfloat* data = weighted(kdata, std::size_t(c) * M, M, o.weights, scratch);
    gpu::copy_to_device(d_data.data(), data, M * sizeof(cfloat), s);
    gpu::synchronize(s);
    auto t = Clock::now();
    adj->adjoint(d_data.data(), d_b.data());
    gpu::synchronize(s);
    fhd_ms += ms_since(t);
    const cfloat* result = d_b.data();
    if (cg) {
      t = Clock::now();
      CgOptions co;
      co.max_iterations = o.iterations;
      co.mu = o.lambda * double(M);
      rep = solver.solve(*normal, d_b.data(), d_x.data(), co, false, reg.get());
      gpu::synchronize(s);
      cg_ms += ms_since(t);
      result = d_x.data();
    }
    gpu::copy_to_host(x.data(), result, V * sizeof(cfloat), s);
    gpu::synchronize(s);
    accumulate_rss(rss, x.data(), V);
  }
  return finish(rss, x, coils, cg, rep, {fhd_ms, q_ms, cg_ms, matrix_ms}, t_all);
}
#endif

}  // namespace

ExactReconResult exact_reconstruct(const ExactModel& model, const std::vector<cfloat>& kdata, int coils,
                                   const ExactReconOptions& o) {
  check_options(model, kdata, coils, o);
  if (!o.gpu) return reconstruct_cpu(model, kdata, coils, o);
#if RADSTREAM_HAVE_CUDA
  return reconstruct_gpu(model, kdata, coils, o);
#else
  throw ConfigError(
      "exact recon: this build has no CUDA backend (rebuild with nvcc, or use the cpu backend)");
#endif
}

std::vector<std::complex<double>> exact_cg_reference(const ExactModel& model, const cfloat* kdata,
                                                     int iterations, double lambda) {
  using cd = std::complex<double>;
  const ExactModel m = model.filled();
  const std::size_t M = m.samples(), V = m.voxels();
  std::vector<cd> d(kdata, kdata + M), b(V);
  exact_adjoint_cpu<double>(m, d.data(), b.data());
  if (iterations <= 0) return b;
  const CsrMatrix c = finite_difference_csr(m.grid.n), ct = c.transposed();
  std::vector<cd> x(V), r = b, p = b, q(V), fp(M), cp(std::size_t(c.rows)), ctcp(V);
  auto spmv = [](const CsrMatrix& a, const cd* in, cd* out) {
#pragma omp parallel for schedule(static)
    for (int row = 0; row < a.rows; ++row) {
      cd s{};
      for (int j = a.row_ptr[row]; j < a.row_ptr[row + 1]; ++j) s += double(a.val[j]) * in[a.col[j]];
      out[row] = s;
    }
  };
  auto dot = [](const std::vector<cd>& a, const std::vector<cd>& bb) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += (std::conj(a[i]) * bb[i]).real();
    return s;
  };
  double rr = dot(r, r);
  for (int it = 0; it < iterations; ++it) {
    exact_forward_cpu<double>(m, p.data(), fp.data());
    exact_adjoint_cpu<double>(m, fp.data(), q.data());
    spmv(c, p.data(), cp.data());
    spmv(ct, cp.data(), ctcp.data());
    for (std::size_t v = 0; v < V; ++v) q[v] += lambda * double(M) * ctcp[v];
    const double pq = dot(p, q), alpha = pq > 0 ? rr / pq : 0.0;
    for (std::size_t v = 0; v < V; ++v) {
      x[v] += alpha * p[v];
      r[v] -= alpha * q[v];
    }
    const double rr_new = dot(r, r), beta = rr > 0 ? rr_new / rr : 0.0;
    for (std::size_t v = 0; v < V; ++v) p[v] = r[v] + beta * p[v];
    rr = rr_new;
  }
  return x;
}

}  // namespace radstream
