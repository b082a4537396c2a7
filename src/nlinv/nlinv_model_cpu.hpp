// NLINV's model on the CPU (nlinv/nlinv_model.hpp): FFTW plans for J and for one G x G array, OpenMP loops
// for the pointwise products.
#pragma once
#include <cstddef>

#include "core/buffer.hpp"
#include "fft/fftw_plan.hpp"
#include "nlinv/nlinv_model.hpp"

namespace radstream {

class NlinvModelCpu final : public NlinvModel {
 public:
  NlinvModelCpu(int matrix, int grid, int coils, const NlinvParams& p, int threads,
                FftPlanner planner = FftPlanner::Estimate);

  Location location() const override { return Location::Host; }
  cfloat* pattern() override { return pattern_.data(); }
  const float* sobolev() const { return weight_.data(); }
  void linearize(const cfloat* x) override;
  void value(cfloat* out) override;
  void derivative(const cfloat* v, cfloat* out) override;
  void derivative_adjoint(const cfloat* r, cfloat* out) override;
  void gradient(const cfloat* y, cfloat* r, cfloat* b) override;
  void normal(const cfloat* v, cfloat* out) override;
  void image(NlinvOutput output, cfloat* out) override;
  void unitary(cfloat* data, int batch, bool inverse) override;
  void coil_maps(cfloat* out) override;
  // The coil images c_j [J][G*G] at the point of linearization.
  const cfloat* coil_images() const { return coils_.data(); }

 private:
  void fft(cfloat* data, int batch, bool inverse) const;

  HostBuffer<float> weight_;
  HostBuffer<cfloat> pattern_, rho_, coils_, work_;
  FftwPlan fwd_j_, inv_j_, fwd_1_, inv_1_;
};

}  // namespace radstream
