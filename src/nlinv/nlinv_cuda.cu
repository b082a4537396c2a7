#include "gpu/cuda_check.cuh"
#include "linalg/vector_ops.hpp"
#include "nlinv/nlinv_cuda.hpp"
#include "nlinv/nlinv_model_cuda.hpp"
#include "noncart/nufft_operator_cuda.hpp"

namespace radstream {

namespace {

NufftKernel nlinv_kernel() {
  NufftKernel k;
  k.width = 6;  // as the CPU twin
  return k;
}

class NlinvCuda final : public NlinvSolver {
 public:
  NlinvCuda(int matrix, int coils, std::size_t points, const NlinvParams& p, gpu::StreamRef stream)
      : NlinvSolver(p,
                    std::make_unique<NlinvModelCuda>(matrix, nlinv_grid_size(matrix, p.grid_os),
                                                     nlinv_model_coils(coils, p), p, stream),
                    make_vector_ops_cuda(stream), make_coil_compressor_cuda(stream), coils, points),
        n_(matrix),
        j_(nlinv_model_coils(coils, p)),
        stream_(stream) {
    const int g = model_->grid();
    nufft_ = std::make_unique<NufftOperatorCuda>(g, j_, points, nlinv_kernel(), stream);
    psf_ = std::make_unique<NufftOperatorCuda>(g, 1, points, nlinv_kernel(), stream);
    ones_ = DeviceBuffer<cfloat>(Extents{points});
    psf_image_ = DeviceBuffer<cfloat>(Extents{model_->pixels()});
    irgnm_->ops().fill(ones_.data(), points, cfloat{1.f, 0.f});
  }

  void grid_frame(const float* d_traj, const cfloat* d_samples) override {
    auto& m = static_cast<NlinvModelCuda&>(*model_);
    nufft_->set_points(d_traj);
    nufft_->adjoint(d_samples, y());
    m.unitary(y(), j_, false);
    irgnm_->ops().scale(y(), m.data_size(), 1.f / float(n_));
    psf_->set_points(d_traj);
    psf_->adjoint(ones_.data(), psf_image_.data());
    m.pattern_from_psf(psf_image_.data(), 1.f / (float(n_) * float(n_)));
  }

 private:
  int n_, j_;
  gpu::StreamRef stream_;
  std::unique_ptr<NufftOperatorCuda> nufft_, psf_;
  DeviceBuffer<cfloat> ones_, psf_image_;
};

}  // namespace

std::unique_ptr<NlinvSolver> make_nlinv_cuda_engine(int matrix, int coils, std::size_t points,
                                                    const NlinvParams& p, gpu::StreamRef stream) {
  return std::make_unique<NlinvCuda>(matrix, coils, points, p, stream);
}

}  // namespace radstream
