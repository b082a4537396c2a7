#include "nlinv/nlinv_model_cpu.hpp"

#include "nlinv/coil_compression.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace radstream {

NlinvModelCpu::NlinvModelCpu(int matrix, int grid, int coils, const NlinvParams& p, int threads,
                             FftPlanner planner)
    : NlinvModel(matrix, grid, coils) {
  weight_ = HostBuffer<float>(Extents{px_});
  nlinv_sobolev_weight(g_, p, weight_.data());
  pattern_ = HostBuffer<cfloat>(Extents{px_});
  rho_ = HostBuffer<cfloat>(Extents{px_});
  coils_ = HostBuffer<cfloat>(Extents{px_ * j_});
  work_ = HostBuffer<cfloat>(Extents{px_ * j_});
  fwd_j_ = FftwPlan({g_, g_}, j_, FftDirection::Forward, planner, threads);
  inv_j_ = FftwPlan({g_, g_}, j_, FftDirection::Inverse, planner, threads);
  fwd_1_ = FftwPlan({g_, g_}, 1, FftDirection::Forward, planner, threads);
  inv_1_ = FftwPlan({g_, g_}, 1, FftDirection::Inverse, planner, threads);
}

void NlinvModelCpu::fft(cfloat* data, int batch, bool inverse) const {
  if (batch == j_)
    (inverse ? inv_j_ : fwd_j_).execute(data);
  else
    (inverse ? inv_1_ : fwd_1_).execute(data);
}

void NlinvModelCpu::coil_maps(cfloat* out) {
  for (int j = 0; j < j_; ++j)
    for (int y = 0; y < n_; ++y)
      for (int x = 0; x < n_; ++x)
        out[(std::size_t(j) * n_ + y) * n_ + x] =
            coils_[std::size_t(j) * px_ + std::size_t(y + lo_) * g_ + std::size_t(x + lo_)];
}

void NlinvModelCpu::unitary(cfloat* data, int batch, bool inverse) {
  fft(data, batch, inverse);
  const float s = 1.f / float(g_);
  const std::size_t n = px_ * std::size_t(batch);
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) data[i] *= s;
}

// The loops run over rows (coil j, grid row y) so that the index arithmetic is per row and the inner loops
// are contiguous; the mask is whole rows (y outside [lo, lo + N)) and the columns [lo, lo + N) of the others.

namespace {
// out[j][p] = in[j][p] * w[p] * s for the J arrays of G x G (in == out allowed); w: the Sobolev weight or D.
template <class W>
void weight_coils(const cfloat* in, cfloat* out, const W* w, float s, int coils, int g) {
  const std::ptrdiff_t rows = std::ptrdiff_t(coils) * g;
#pragma omp parallel for
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    const std::size_t o = std::size_t(r) * g;
    const W* wr = w + std::size_t(r % g) * g;
    for (int x = 0; x < g; ++x) out[o + x] = in[o + x] * (wr[x] * s);
  }
}
}  // namespace

void NlinvModelCpu::linearize(const cfloat* x) {
  std::memcpy(static_cast<void*>(rho_.data()), x, px_ * sizeof(cfloat));
  weight_coils(x + px_, coils_.data(), weight_.data(), 1.f / float(g_), j_, g_);  // 1 / sqrt(G^2): U^H
  fft(coils_.data(), j_, true);
}

void NlinvModelCpu::value(cfloat* out) {
  const std::ptrdiff_t rows = std::ptrdiff_t(j_) * g_;
#pragma omp parallel for
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    const int y = int(r % g_);
    cfloat* o = out + std::size_t(r) * g_;
    std::fill(o, o + g_, cfloat{});
    if (y < lo_ || y >= lo_ + n_) continue;
    const cfloat* c = coils_.data() + std::size_t(r) * g_;
    const cfloat* rho = rho_.data() + std::size_t(y) * g_;
    for (int x = lo_; x < lo_ + n_; ++x) o[x] = rho[x] * c[x];
  }
  fft(out, j_, false);
  weight_coils(out, out, pattern_.data(), 1.f / float(g_), j_, g_);
}

void NlinvModelCpu::derivative(const cfloat* v, cfloat* out) {
  const cfloat* drho = v;
  const cfloat* dchat = v + px_;
  const float s = 1.f / float(g_);
  const std::ptrdiff_t rows = std::ptrdiff_t(j_) * g_;
  weight_coils(dchat, out, weight_.data(), s, j_, g_);
  fft(out, j_, true);  // out_j = dc_j
#pragma omp parallel for
  for (std::ptrdiff_t r = 0; r < rows; ++r) {
    const int y = int(r % g_);
    cfloat* o = out + std::size_t(r) * g_;
    if (y < lo_ || y >= lo_ + n_) {
      std::fill(o, o + g_, cfloat{});
      continue;
    }
    const cfloat* c = coils_.data() + std::size_t(r) * g_;
    const cfloat* rho = rho_.data() + std::size_t(y) * g_;
    const cfloat* dr = drho + std::size_t(y) * g_;
    std::fill(o, o + lo_, cfloat{});
    for (int x = lo_; x < lo_ + n_; ++x) o[x] = (dr[x] * c[x] + rho[x] * o[x]) * s;
    std::fill(o + lo_ + n_, o + g_, cfloat{});
  }
  fft(out, j_, false);
}

void NlinvModelCpu::gradient(const cfloat* y, cfloat* r, cfloat* b) {
  value(r);
  const std::ptrdiff_t m = std::ptrdiff_t(data_size());
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < m; ++i) r[i] = y[i] - r[i];
  derivative_adjoint(r, b);
}

void NlinvModelCpu::derivative_adjoint(const cfloat* r, cfloat* out) {
  cfloat* drho = out;
  cfloat* t = out + px_;  // U^H r_j, then the coils' part in place
  const float s = 1.f / float(g_);
  std::memcpy(static_cast<void*>(t), r, px_ * j_ * sizeof(cfloat));
  fft(t, j_, true);
#pragma omp parallel for
  for (int y = 0; y < g_; ++y) {
    const std::size_t row = std::size_t(y) * g_;
    const bool inside = y >= lo_ && y < lo_ + n_;
    for (int x = 0; x < g_; ++x) {
      const std::size_t p = row + std::size_t(x);
      if (!inside || x < lo_ || x >= lo_ + n_) {
        drho[p] = {};
        for (int j = 0; j < j_; ++j) t[std::size_t(j) * px_ + p] = {};
        continue;
      }
      cfloat acc{};
      const cfloat rho_c = std::conj(rho_[p]) * s;
      for (int j = 0; j < j_; ++j) {
        const std::size_t i = std::size_t(j) * px_ + p;
        const cfloat tj = t[i];
        acc += std::conj(coils_[i]) * tj;
        t[i] = rho_c * tj;
      }
      drho[p] = acc * s;
    }
  }
  fft(t, j_, false);
  weight_coils(t, t, weight_.data(), s, j_, g_);
}

void NlinvModelCpu::normal(const cfloat* v, cfloat* out) {
  derivative(v, work_.data());
  weight_coils(work_.data(), work_.data(), pattern_.data(), 1.f, j_, g_);
  derivative_adjoint(work_.data(), out);
}

void NlinvModelCpu::image(NlinvOutput output, cfloat* out) {
  for (int y = 0; y < n_; ++y)
    for (int x = 0; x < n_; ++x) {
      const std::size_t p = std::size_t(y + lo_) * g_ + std::size_t(x + lo_);
      cfloat v = rho_[p];
      if (output == NlinvOutput::Combined) {
        double power = 0;
        for (int j = 0; j < j_; ++j) power += std::norm(coils_[std::size_t(j) * px_ + p]);
        v *= float(std::sqrt(power));
      }
      out[std::size_t(y) * n_ + x] = v;
    }
}

}  // namespace radstream
