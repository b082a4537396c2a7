// NLINV's model on the GPU (nlinv/nlinv_model.hpp), the CPU twin's operations as kernels on one stream and
// cuFFT plans for J and for one G x G array; enqueued, never synchronized. CUDA builds only.
#pragma once
#include <memory>

#include "fft/cufft_plan.hpp"
#include "gpu/device_memory.hpp"
#include "nlinv/nlinv_fused_cuda.hpp"
#include "nlinv/nlinv_model.hpp"

namespace radstream {

class NlinvModelCuda final : public NlinvModel {
 public:
  NlinvModelCuda(int matrix, int grid, int coils, const NlinvParams& p, gpu::StreamRef stream);
  ~NlinvModelCuda() override;

  Location location() const override { return Location::Device; }
  gpu::StreamRef stream() const override { return stream_; }
  cfloat* pattern() override { return pattern_.data(); }
  void linearize(const cfloat* x) override;
  void value(cfloat* out) override;
  void derivative(const cfloat* v, cfloat* out) override;
  void derivative_adjoint(const cfloat* r, cfloat* out) override;
  void gradient(const cfloat* y, cfloat* r, cfloat* b) override;
  void normal(const cfloat* v, cfloat* out) override;
  void image(NlinvOutput output, cfloat* out) override;
  void unitary(cfloat* data, int batch, bool inverse) override;
  void coil_maps(cfloat* out) override;
  // D from the point spread function image [G*G] (centre at G/2): rolled to offset 0 at cell 0, transformed,
  // times `scale` (d and psf may not alias).
  void pattern_from_psf(const cfloat* psf, float scale);

 private:
  void fft(cfloat* data, int batch, bool inverse) const;
  void scale(cfloat* data, std::size_t n, float s);
  // DG^H of the data-sized array already in out's coil part (out + pixels()), in place.
  void adjoint_in_place(cfloat* out);

  gpu::StreamRef stream_;
  DeviceBuffer<float> weight_;
  DeviceBuffer<cfloat> pattern_, rho_, coils_, work_;
  CufftPlan fft_j_, fft_1_;
  // normal(), linearize() and gradient() on the custom FFT engine where it takes the grid
  // (nlinv_fused_cuda.hpp); else through cuFFT.
  std::unique_ptr<NlinvFusedCuda> fused_;
  NlinvFusedCuda::Point point() const {
    return {weight_.data(), pattern_.data(), rho_.data(), coils_.data()};
  }
};

}  // namespace radstream
