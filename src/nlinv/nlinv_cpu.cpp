#include "nlinv/nlinv_cpu.hpp"

#include "linalg/vector_ops.hpp"

namespace radstream {

namespace {
NufftKernel nlinv_kernel() {
  NufftKernel k;
  k.width = 6;  // ~1e-5: the gridded data and the transfer function as exact as the model needs
  return k;
}
}  // namespace

NlinvCpu::NlinvCpu(int matrix, int coils, std::size_t points, const NlinvParams& p, int threads,
                   FftPlanner planner)
    : NlinvSolver(p,
                  std::make_unique<NlinvModelCpu>(matrix, nlinv_grid_size(matrix, p.grid_os),
                                                  nlinv_model_coils(coils, p), p, threads, planner),
                  make_vector_ops_cpu(), make_coil_compressor_cpu(), coils, points),
      n_(matrix),
      j_(nlinv_model_coils(coils, p)) {
  const int g = model_->grid();
  nufft_ = std::make_unique<NufftOperatorCpu>(2, std::array<int, 3>{g, g, 1}, j_, points, nlinv_kernel(),
                                              planner, threads);
  psf_ = std::make_unique<NufftOperatorCpu>(2, std::array<int, 3>{g, g, 1}, 1, points, nlinv_kernel(),
                                            planner, threads);
  ones_ = HostBuffer<cfloat>(Extents{points});
  psf_image_ = HostBuffer<cfloat>(Extents{model_->pixels()});
  for (auto& v : ones_) v = cfloat{1.f, 0.f};
}

void NlinvCpu::grid_frame(const float* traj, const cfloat* samples) {
  const int g = model_->grid();
  const std::size_t px = model_->pixels();
  // y_j = U A^H s_j with A = E / N (E the unscaled NUDFT on the G x G grid): unitary for the N x N image.
  nufft_->set_points(traj);
  nufft_->adjoint(samples, y());
  model_->unitary(y(), j_, false);
  irgnm_->ops().scale(y(), model_->data_size(), 1.f / float(n_));
  // D = DFT of the point spread function h = A^H A delta = E^H 1 / N^2, rolled so that offset 0 is cell 0.
  psf_->set_points(traj);
  psf_->adjoint(ones_.data(), psf_image_.data());
  cfloat* d = model_->pattern();
  const int half = g / 2;
  for (int y = 0; y < g; ++y)
    for (int x = 0; x < g; ++x)
      d[std::size_t(y) * g + x] = psf_image_[std::size_t((y + half) % g) * g + std::size_t((x + half) % g)];
  model_->unitary(d, 1, false);
  irgnm_->ops().scale(d, px, float(g) / (float(n_) * float(n_)));  // the unnormalized DFT = G U
}

}  // namespace radstream

#ifndef RADSTREAM_HAVE_CUDA
#include "core/error.hpp"
#include "nlinv/nlinv_cuda.hpp"

namespace radstream {
std::unique_ptr<NlinvSolver> make_nlinv_cuda_engine(int, int, std::size_t, const NlinvParams&,
                                                    gpu::StreamRef) {
  throw CudaError("make_nlinv_cuda_engine", "this build has no CUDA backend", __FILE__, __LINE__);
}
}  // namespace radstream
#endif
