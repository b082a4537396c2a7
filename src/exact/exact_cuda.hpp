// The exact model's sums on the GPU (the twin of exact_cpu.hpp). Without a field the adjoint and Q give each
// thread a run of voxels along the fastest axis and step between them by a phasor recurrence (one sincos per
// sample and run, then complex products on the FP32 pipes, restarted every run so the error stays ~1e-6); the
// forward gives each thread a sample and the same recurrence along voxel rows. With a field map or gradients
// every (sample, voxel) pair is evaluated in full. Samples (adjoint) or voxels (forward) are staged in shared
// memory tiles; partial sums per tile keep float's rounding from growing with the sum's length; the base
// phase is formed with exact products (fma) and reduced to [-0.5, 0.5) cycles before the trig. fast =
// hardware
// __sincosf on the reduced phase instead of sincospif. CUDA builds only (else the constructor throws).
#pragma once
#include "core/exact_model.hpp"
#include "gpu/handles.hpp"
#include "linalg/linear_operator.hpp"

namespace radstream {

// The model's arrays on the device, shared by the operator and Q.
struct ExactDeviceModel;

class ExactOperatorCuda final : public LinearOperator {
 public:
  ExactOperatorCuda(const ExactModel& model, bool fast, gpu::StreamRef stream);
  ~ExactOperatorCuda() override;
  gpu::StreamRef stream() const override { return stream_; }
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;
  // Q on the model's q_grid() into d_q (2N per axis), sample weights d_w (device, nullptr: all 1).
  void q(const float* d_w, cfloat* d_q);
  // The model's matrix G into d_g: row i (sample i) at d_g + i * ld, voxels in order, columns V..ld-1 set to
  // 0; each entry the same pair term as the field kernels (every term in full, no row recurrence).
  void matrix(cfloat* d_g, std::size_t ld);

 private:
  gpu::StreamRef stream_;
  bool fast_;
  ExactDeviceModel* dm_ = nullptr;
};

}  // namespace radstream
