#include <array>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "exact/segmented_toeplitz.hpp"
#include "fft/toeplitz_kernel.hpp"

namespace radstream {

int segment_pair(int l, int lp, int segments) {
  if (l > lp) std::swap(l, lp);
  return l * segments - l * (l - 1) / 2 + (lp - l);
}

std::vector<cfloat> segment_pair_weights(const TimeSegments& seg) {
  const int L = int(seg.times.size());
  const std::size_t Mt = seg.weights.size() / std::size_t(L);
  std::vector<cfloat> w(std::size_t(L * (L + 1) / 2) * Mt);
  for (int l = 0; l < L; ++l)
    for (int lp = l; lp < L; ++lp) {
      cfloat* out = w.data() + std::size_t(segment_pair(l, lp, L)) * Mt;
      const float* a = seg.weights.data() + std::size_t(l) * Mt;
      const float* b = seg.weights.data() + std::size_t(lp) * Mt;
      for (std::size_t m = 0; m < Mt; ++m) out[m] = cfloat(a[m] * b[m], 0.f);
    }
  return w;
}

std::size_t check_segmented_toeplitz(const LinearOperator& g, const SegmentedToeplitzSpec& s) {
  if (s.segments < 1 || s.segments > kMaxToeplitzSegments)
    throw ConfigError("segmented Toeplitz: " + std::to_string(s.segments) +
                      " segments; the Toeplitz form takes 1.." + std::to_string(kMaxToeplitzSegments) +
                      " (more: the time-segmented operator's own normal)");
  const std::size_t V = std::size_t(s.matrix) * std::size_t(s.matrix);
  if (s.matrix < 1 || s.coils < 1 || !s.maps || g.domain().size() != V || s.fm.size() != V || s.t.empty() ||
      g.codomain().size() != std::size_t(s.coils) * s.t.size())
    throw InputError(
        "segmented Toeplitz: matrix " + std::to_string(s.matrix) + ", " + std::to_string(s.coils) +
        " coils, " + std::to_string(s.fm.size()) + " field-map values and " + std::to_string(s.t.size()) +
        " times do not fit an operator of " + std::to_string(g.domain().size()) + " voxels and " +
        std::to_string(g.codomain().size()) + " samples" + (s.maps ? "" : " (no coil maps)"));
  return s.t.size();
}

SegmentedToeplitzCpu::SegmentedToeplitzCpu(std::shared_ptr<LinearOperator> g,
                                           const SegmentedToeplitzSpec& spec, int threads)
    : LinearOperator(g->domain(), g->codomain(), Location::Host),
      g_(std::move(g)),
      N_(spec.matrix),
      C_(spec.coils),
      L_(spec.segments),
      P_(spec.segments * (spec.segments + 1) / 2),
      maps_(spec.maps) {
  check_segmented_toeplitz(*g_, spec);
  const TimeSegments seg = make_time_segments(spec.t, spec.segments);
  e_ = segment_phasors(spec.fm, seg.times);
  pair_w_ = segment_pair_weights(seg);
  const int M = 2 * N_;
  const std::size_t cells = std::size_t(M) * M;
  kernels_.assign(std::size_t(P_) * cells, 0.f);
  fwd_ = FftwPlan({M, M}, L_, FftDirection::Forward, FftPlanner::Estimate, threads);
  inv_ = FftwPlan({M, M}, L_, FftDirection::Inverse, FftPlanner::Estimate, threads);
  kfft_ = FftwPlan({M, M}, 1, FftDirection::Forward, FftPlanner::Estimate, threads);
  grids_ = HostBuffer<cfloat>(Extents{std::size_t(L_), cells});
  t_ = HostBuffer<cfloat>(Extents{cells});
  k_ = HostBuffer<cfloat>(Extents{cells});
}

void SegmentedToeplitzCpu::make_kernels(LinearOperator& psf) {
  const int M = 2 * N_;
  const std::size_t cells = std::size_t(M) * M, Mt = pair_w_.size() / std::size_t(P_);
  if (psf.domain().size() != cells || psf.codomain().size() != Mt || psf.location() != Location::Host)
    throw InputError("segmented Toeplitz: the PSF operator must map a host [" + std::to_string(M) + "][" +
                     std::to_string(M) + "] grid to " + std::to_string(Mt) + " samples");
  for (int p = 0; p < P_; ++p) {
    psf.adjoint(pair_w_.data() + std::size_t(p) * Mt, t_.data());
    toeplitz_kernel_cpu(t_.data(), N_, k_.data(), kfft_);
    float* out = kernels_.data() + std::size_t(p) * cells;
    for (std::size_t i = 0; i < cells; ++i) out[i] = k_[i].real();
  }
  ready_ = true;
}

void SegmentedToeplitzCpu::normal(const cfloat* x, cfloat* z) {
  if (!ready_) throw InputError("segmented Toeplitz: make_kernels() has not been called");
  const long N = N_, M = 2 * N_, cells = M * M, V = N * N, L = L_;
  std::fill(z, z + V, cfloat{});
  for (long c = 0; c < C_; ++c) {
    const cfloat* s = maps_ + c * V;
    std::memset(static_cast<void*>(grids_.data()), 0, grids_.size() * sizeof(cfloat));
#pragma omp parallel for collapse(2) schedule(static)
    for (long l = 0; l < L; ++l)
      for (long p = 0; p < V; ++p) grids_[l * cells + (p / N) * M + p % N] = s[p] * e_[l * V + p] * x[p];
    fwd_.execute(grids_.data());
#pragma omp parallel for schedule(static)
    for (long i = 0; i < cells; ++i) {
      std::array<cfloat, kMaxToeplitzSegments> in{};
      for (long l = 0; l < L; ++l) in[l] = grids_[l * cells + i];
      for (long l = 0; l < L; ++l) {
        cfloat y = 0;
        for (long lp = 0; lp < L; ++lp)
          y += kernels_[std::size_t(segment_pair(int(l), int(lp), L_)) * cells + i] * in[lp];
        grids_[l * cells + i] = y;
      }
    }
    inv_.execute(grids_.data());
#pragma omp parallel for schedule(static)
    for (long p = 0; p < V; ++p) {
      cfloat acc = 0;
      for (long l = 0; l < L; ++l) acc += std::conj(e_[l * V + p]) * grids_[l * cells + (p / N) * M + p % N];
      z[p] += std::conj(s[p]) * acc;
    }
  }
}

}  // namespace radstream
