#include "nlinv/nlinv_model_cpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace radstream {

NlinvModelCpu::NlinvModelCpu(int matrix, int grid, int coils, const NlinvParams& p, int threads)
    : NlinvModel(matrix, grid, coils) {
  weight_ = HostBuffer<float>(Extents{px_});
  nlinv_sobolev_weight(g_, p, weight_.data());
  pattern_ = HostBuffer<cfloat>(Extents{px_});
  rho_ = HostBuffer<cfloat>(Extents{px_});
  coils_ = HostBuffer<cfloat>(Extents{px_ * j_});
  work_ = HostBuffer<cfloat>(Extents{px_ * j_});
  fwd_j_ = FftwPlan({g_, g_}, j_, FftDirection::Forward, FftPlanner::Estimate, threads);
  inv_j_ = FftwPlan({g_, g_}, j_, FftDirection::Inverse, FftPlanner::Estimate, threads);
  fwd_1_ = FftwPlan({g_, g_}, 1, FftDirection::Forward, FftPlanner::Estimate, threads);
  inv_1_ = FftwPlan({g_, g_}, 1, FftDirection::Inverse, FftPlanner::Estimate, threads);
}

void NlinvModelCpu::fft(cfloat* data, int batch, bool inverse) const {
  if (batch == j_)
    (inverse ? inv_j_ : fwd_j_).execute(data);
  else
    (inverse ? inv_1_ : fwd_1_).execute(data);
}

void NlinvModelCpu::scale(cfloat* data, std::size_t n, float s) {
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) data[i] *= s;
}

void NlinvModelCpu::set(cfloat* data, std::size_t n, cfloat v) {
  std::fill(data, data + n, v);
}

void NlinvModelCpu::set_compression(const std::vector<cfloat>& matrix, int in_coils) {
  compression_ = matrix;
  in_coils_ = in_coils;
}

void NlinvModelCpu::compress(const cfloat* in, cfloat* out, std::size_t points) {
#pragma omp parallel for
  for (std::ptrdiff_t pi = 0; pi < std::ptrdiff_t(points); ++pi) {
    const std::size_t p = std::size_t(pi);
    for (int v = 0; v < j_; ++v) {
      cfloat acc{};
      for (int a = 0; a < in_coils_; ++a)
        acc += in[std::size_t(a) * points + p] * compression_[std::size_t(a) * j_ + v];
      out[std::size_t(v) * points + p] = acc;
    }
  }
}

void NlinvModelCpu::to_host(cfloat* host, const cfloat* src, std::size_t n) {
  std::copy(src, src + n, host);
}

void NlinvModelCpu::unitary(cfloat* data, int batch, bool inverse) {
  fft(data, batch, inverse);
  const float s = 1.f / float(g_);
  const std::size_t n = px_ * std::size_t(batch);
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) data[i] *= s;
}

namespace {
// True inside the mask: the central N x N cells [lo, lo + N) per axis.
inline bool in_mask(std::size_t p, int g, int lo, int n) {
  const int y = int(p / std::size_t(g)), x = int(p % std::size_t(g));
  return y >= lo && y < lo + n && x >= lo && x < lo + n;
}
}  // namespace

void NlinvModelCpu::linearize(const cfloat* x) {
  std::memcpy(static_cast<void*>(rho_.data()), x, px_ * sizeof(cfloat));
  const cfloat* chat = x + px_;
  const float s = 1.f / float(g_);  // 1 / sqrt(G^2): U^H
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(px_ * j_); ++i)
    coils_[std::size_t(i)] = chat[i] * (weight_[std::size_t(i) % px_] * s);
  fft(coils_.data(), j_, true);
}

void NlinvModelCpu::value(cfloat* out) {
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(px_ * j_); ++i) {
    const std::size_t p = std::size_t(i) % px_;
    out[i] = in_mask(p, g_, lo_, n_) ? rho_[p] * coils_[std::size_t(i)] : cfloat{};
  }
  fft(out, j_, false);
  const float s = 1.f / float(g_);
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(px_ * j_); ++i) out[i] *= pattern_[std::size_t(i) % px_] * s;
}

void NlinvModelCpu::derivative(const cfloat* v, cfloat* out) {
  const cfloat* drho = v;
  const cfloat* dchat = v + px_;
  const float s = 1.f / float(g_);
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(px_ * j_); ++i)
    out[i] = dchat[i] * (weight_[std::size_t(i) % px_] * s);
  fft(out, j_, true);  // out_j = dc_j
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(px_ * j_); ++i) {
    const std::size_t p = std::size_t(i) % px_;
    out[i] = in_mask(p, g_, lo_, n_) ? (drho[p] * coils_[std::size_t(i)] + rho_[p] * out[i]) * s : cfloat{};
  }
  fft(out, j_, false);
}

void NlinvModelCpu::derivative_adjoint(const cfloat* r, cfloat* out) {
  cfloat* drho = out;
  cfloat* t = out + px_;  // U^H r_j, then the coils' part in place
  const float s = 1.f / float(g_);
  std::memcpy(static_cast<void*>(t), r, px_ * j_ * sizeof(cfloat));
  fft(t, j_, true);
#pragma omp parallel for
  for (std::ptrdiff_t pi = 0; pi < std::ptrdiff_t(px_); ++pi) {
    const std::size_t p = std::size_t(pi);
    if (!in_mask(p, g_, lo_, n_)) {
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
  fft(t, j_, false);
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(px_ * j_); ++i) t[i] *= weight_[std::size_t(i) % px_] * s;
}

void NlinvModelCpu::normal(const cfloat* v, cfloat* out) {
  derivative(v, work_.data());
#pragma omp parallel for
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(px_ * j_); ++i)
    work_[std::size_t(i)] *= pattern_[std::size_t(i) % px_];
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
