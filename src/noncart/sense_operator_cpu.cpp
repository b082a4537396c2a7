#include "noncart/sense_operator_cpu.hpp"

#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "fft/toeplitz_kernel.hpp"

namespace radstream {

SenseOperatorCpu::SenseOperatorCpu(int matrix, int coils, std::size_t points, const NufftKernel& kernel,
                                   bool toeplitz, int threads, FftPlanner planner, int images)
    : LinearOperator(sense_image_extents(matrix, images), Extents{sense_channels(coils, images), points},
                     Location::Host),
      N_(matrix),
      coils_(coils),
      images_(images),
      channels_(int(sense_channels(coils, images))),
      points_(points),
      pixels_(std::size_t(matrix) * matrix),
      toeplitz_(toeplitz),
      nufft_(2, {matrix, matrix, 1}, channels_, points, kernel, planner, threads) {
  const std::size_t channels = std::size_t(channels_);
  coil_images_ = HostBuffer<cfloat>(Extents{channels, pixels_});
  samples_ = HostBuffer<cfloat>(Extents{channels, points});
  sqrt_w_ = HostBuffer<float>(Extents{points});
  if (!toeplitz) direct_ = HostBuffer<cfloat>(Extents{channels, points});
  if (toeplitz) {
    const int M = 2 * matrix;
    psf_nufft_ = std::make_unique<NufftOperatorCpu>(2, std::array<int, 3>{M, M, 1}, 1, points, kernel,
                                                    planner, threads);
    fwd2_ = FftwPlan({M, M}, channels_, FftDirection::Forward, planner, threads);
    inv2_ = FftwPlan({M, M}, channels_, FftDirection::Inverse, planner, threads);
    psf_fft_ = FftwPlan({M, M}, 1, FftDirection::Forward, planner, threads);
    kernel_ = HostBuffer<cfloat>(Extents{std::size_t(M), std::size_t(M)});
    grids2_ = HostBuffer<cfloat>(Extents{channels, std::size_t(M), std::size_t(M)});
    psf_w_ = HostBuffer<cfloat>(Extents{points});
    psf_t_ = HostBuffer<cfloat>(Extents{std::size_t(M), std::size_t(M)});
  }
}

void SenseOperatorCpu::set_maps(const cfloat* maps) {
  maps_ = maps;
}

void SenseOperatorCpu::check_ready() const {
  if (!maps_) throw InputError("sense: set_maps() has not been called");
  if (!points_set_) throw InputError("sense: set_points() has not been called");
}

void SenseOperatorCpu::set_points(const float* traj, const float* weights) {
  nufft_.set_points(traj);
  weighted_ = weights != nullptr;
  double s = 0;
  for (std::size_t j = 0; j < points_; ++j) {
    float w = weights ? weights[j] : 1.f;
    if (!(w >= 0.f) || !std::isfinite(w)) w = 0.f;  // as on the GPU: a bad weight drops its sample
    sqrt_w_[j] = std::sqrt(w);
    if (toeplitz_) psf_w_[j] = cfloat(w, 0.f);
    s += w;
  }
  weight_sum_ = s;
  points_set_ = true;
  if (!toeplitz_) return;
  // T(d) = sum_j w_j exp(+2 pi i k_j d) on d = m - N, m in [0, 2N): the adjoint NUFFT of the weights.
  psf_nufft_->set_points(traj);
  psf_nufft_->adjoint(psf_w_.data(), psf_t_.data());
  toeplitz_kernel_cpu(psf_t_.data(), N_, kernel_.data(), psf_fft_);
}

void SenseOperatorCpu::forward(const cfloat* x, cfloat* y) {
  check_ready();
  const long pixels = long(pixels_);
#pragma omp parallel for collapse(2) schedule(static)
  for (long c = 0; c < long(channels_); ++c)
    for (long p = 0; p < pixels; ++p)
      coil_images_[c * pixels + p] = maps_[c * pixels + p] * x[(c / coils_) * pixels + p];
  nufft_.forward(coil_images_.data(), y);
  if (weighted_) {
    const long n = long(points_);
#pragma omp parallel for collapse(2) schedule(static)
    for (long c = 0; c < long(channels_); ++c)
      for (long j = 0; j < n; ++j) y[c * n + j] *= sqrt_w_[j];
  }
}

namespace {

// s += conj(m) v: in float (the frame path), or in double with exact products (the coil split's sums).
inline void add_conj_product(cfloat& s, cfloat m, cfloat v) {
  s += std::conj(m) * v;
}
inline void add_conj_product(std::complex<double>& s, cfloat m, cfloat v) {
  const double mr = m.real(), mi = m.imag(), vr = v.real(), vi = v.imag();
  s += std::complex<double>(mr * vr + mi * vi, mr * vi - mi * vr);
}

}  // namespace

template <class T>
void SenseOperatorCpu::adjoint_into(const cfloat* y, T* x) {
  check_ready();
  const cfloat* in = y;
  if (weighted_) {
    const long n = long(points_);
#pragma omp parallel for collapse(2) schedule(static)
    for (long c = 0; c < long(channels_); ++c)
      for (long j = 0; j < n; ++j) samples_[c * n + j] = y[c * n + j] * sqrt_w_[j];
    in = samples_.data();
  }
  nufft_.adjoint(in, coil_images_.data());
  const long pixels = long(pixels_);
#pragma omp parallel for collapse(2) schedule(static)
  for (long g = 0; g < long(images_); ++g)
    for (long p = 0; p < pixels; ++p) {
      T s = 0;
      for (long c = g * coils_; c < (g + 1) * coils_; ++c)
        add_conj_product(s, maps_[c * pixels + p], coil_images_[c * pixels + p]);
      x[g * pixels + p] = s;
    }
}

template <class T>
void SenseOperatorCpu::toeplitz_into(const cfloat* x, T* z) {
  check_ready();
  const long N = N_, M = 2 * N_, cells = M * M, pixels = long(pixels_);
  std::memset(static_cast<void*>(grids2_.data()), 0, grids2_.size() * sizeof(cfloat));
#pragma omp parallel for collapse(2) schedule(static)
  for (long c = 0; c < long(channels_); ++c)
    for (long y = 0; y < N; ++y)
      for (long xx = 0; xx < N; ++xx)
        grids2_[c * cells + y * M + xx] =
            maps_[c * pixels + y * N + xx] * x[(c / coils_) * pixels + y * N + xx];
  fwd2_.execute(grids2_.data());
#pragma omp parallel for collapse(2) schedule(static)
  for (long c = 0; c < long(channels_); ++c)
    for (long i = 0; i < cells; ++i) grids2_[c * cells + i] *= kernel_[i];
  inv2_.execute(grids2_.data());
#pragma omp parallel for collapse(2) schedule(static)
  for (long g = 0; g < long(images_); ++g)
    for (long p = 0; p < pixels; ++p) {
      const long y = p / N, xx = p % N;
      T s = 0;
      for (long c = g * coils_; c < (g + 1) * coils_; ++c)
        add_conj_product(s, maps_[c * pixels + p], grids2_[c * cells + y * M + xx]);
      z[g * pixels + p] = s;
    }
}

void SenseOperatorCpu::adjoint(const cfloat* y, cfloat* x) {
  adjoint_into(y, x);
}

void SenseOperatorCpu::normal(const cfloat* x, cfloat* z) {
  if (!toeplitz_) return normal_direct(x, z);
  toeplitz_into(x, z);
}

void SenseOperatorCpu::adjoint_sum(const cfloat* y, std::complex<double>* x) {
  adjoint_into(y, x);
}

void SenseOperatorCpu::normal_sum(const cfloat* x, std::complex<double>* z) {
  if (toeplitz_) return toeplitz_into(x, z);
  forward(x, direct_.data());
  adjoint_into(direct_.data(), z);
}

void SenseOperatorCpu::round_sum(const std::complex<double>* sum, cfloat* out) {
  for (std::size_t p = 0; p < pixels_ * std::size_t(images_); ++p) out[p] = cfloat(sum[p]);
}

}  // namespace radstream
