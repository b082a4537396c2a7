#include "nlinv/nlinv_cpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.hpp"
#include "core/log.hpp"

namespace radstream {

namespace {
NufftKernel nlinv_kernel() {
  NufftKernel k;
  k.width = 6;  // ~1e-5: the gridded data and the transfer function as exact as the model needs
  return k;
}
}  // namespace

NlinvCpu::NlinvCpu(int matrix, int coils, std::size_t points, const NlinvParams& p, int threads)
    : p_(p), n_(matrix), j_(coils), points_(points) {
  const int g = nlinv_grid_size(matrix, p.grid_os);
  model_ = std::make_unique<NlinvModelCpu>(matrix, g, coils, p, threads);
  irgnm_ = std::make_unique<IrgnmCpu>(*model_);
  nufft_ = std::make_unique<NufftOperatorCpu>(2, std::array<int, 3>{g, g, 1}, coils, points, nlinv_kernel(),
                                              FftPlanner::Estimate, threads);
  psf_ = std::make_unique<NufftOperatorCpu>(2, std::array<int, 3>{g, g, 1}, 1, points, nlinv_kernel(),
                                            FftPlanner::Estimate, threads);
  y_ = HostBuffer<cfloat>(Extents{model_->data_size()});
  x_ = HostBuffer<cfloat>(Extents{model_->unknowns()});
  ref_ = HostBuffer<cfloat>(Extents{model_->unknowns()});
  ones_ = HostBuffer<cfloat>(Extents{points});
  psf_image_ = HostBuffer<cfloat>(Extents{model_->pixels()});
  for (auto& v : ones_) v = cfloat{1.f, 0.f};
  reset();
}

void NlinvCpu::reset() {
  std::fill(x_.begin(), x_.end(), cfloat{});
  for (std::size_t i = 0; i < model_->pixels(); ++i) x_[i] = cfloat{1.f, 0.f};  // rho = 1, c = 0
  std::fill(ref_.begin(), ref_.end(), cfloat{});
  scaling_ = -1;
  first_ = true;
}

void NlinvCpu::grid_frame(const float* traj, const cfloat* samples) {
  const int g = model_->grid();
  const std::size_t px = model_->pixels();
  // y_j = U A^H s_j with A = E / N (E the unscaled NUDFT on the G x G grid): unitary for the N x N image.
  nufft_->set_points(traj);
  nufft_->adjoint(samples, y_.data());
  model_->unitary(y_.data(), j_, false);
  const float inv_n = 1.f / float(n_);
  for (auto& v : y_) v *= inv_n;
  // D = DFT of the point spread function h = A^H A delta = E^H 1 / N^2, rolled so that offset 0 is cell 0.
  psf_->set_points(traj);
  psf_->adjoint(ones_.data(), psf_image_.data());
  cfloat* d = model_->pattern();
  const int half = g / 2;
  for (int y = 0; y < g; ++y)
    for (int x = 0; x < g; ++x)
      d[std::size_t(y) * g + x] = psf_image_[std::size_t((y + half) % g) * g + std::size_t((x + half) % g)];
  model_->unitary(d, 1, false);
  const float scale = float(g) / (float(n_) * float(n_));  // unnormalized DFT = G U
  for (std::size_t i = 0; i < px; ++i) d[i] *= scale;
}

NlinvFrameReport NlinvCpu::reconstruct(const float* traj, const cfloat* samples, cfloat* out) {
  grid_frame(traj, samples);
  const std::size_t m = model_->data_size();
  if (scaling_ < 0) {
    double s = 0;
    for (std::size_t i = 0; i < m; ++i) s += std::norm(std::complex<double>(y_[i]));
    if (!(s > 0) || !std::isfinite(s))
      throw InputError(
          "nlinv: the stream's first frame has no signal (its gridded k-space is zero or not finite)");
    scaling_ = 100.0 / std::sqrt(s);
  }
  const float sc = float(scaling_);
  for (std::size_t i = 0; i < m; ++i) y_[i] *= sc;
  NlinvFrameReport rep;
  rep.scaling = scaling_;
  rep.irgnm = irgnm_->solve(p_, x_.data(), first_ ? nullptr : ref_.data(), y_.data());
  const float damp = float(p_.temporal_damping);
  for (std::size_t i = 0; i < x_.size(); ++i) ref_[i] = damp * x_[i];
  first_ = false;
  model_->image(p_.output, out);
  return rep;
}

}  // namespace radstream
