// One stream's NLINV on the CPU (BART's rtnlinv, frame by frame): each frame's spokes are gridded once onto
// the model's oversampled grid (y_j = U A^H s_j, A the NUFFT on the G x G grid scaled as unitary for the N x
// N image, as BART's nufft and its factor 2 do) and its transfer function D made from the same trajectory;
// every frame's data are scaled by 100 / ||y|| of the stream's first frame; the IRGNM starts from the
// previous frame's solution (the first from rho = 1, c = 0) and is regularized toward temporal_damping times
// it. Frames of one stream must share the matrix and the coil count; a new stream is a new object.
#pragma once
#include <memory>
#include <vector>

#include "core/buffer.hpp"
#include "nlinv/irgnm_cpu.hpp"
#include "nlinv/nlinv_engine.hpp"
#include "nlinv/nlinv_model_cpu.hpp"
#include "noncart/nufft_operator_cpu.hpp"

namespace radstream {

class NlinvCpu final : public NlinvEngine {
 public:
  // matrix N, coils J, points: samples per frame (spokes x samples); threads 0 = all.
  NlinvCpu(int matrix, int coils, std::size_t points, const NlinvParams& p, int threads);

  // traj [points][2] in cycles per pixel of the N x N image; samples [coils][points]; out [N*N].
  NlinvFrameReport reconstruct(const float* traj, const cfloat* samples, cfloat* out) override;
  void reset() override;

  NlinvModelCpu& model() { return *model_; }
  // The solution x = (rho, chat) of the last frame.
  const cfloat* solution() const { return x_.data(); }
  // The frame's gridded data y [J][G*G] (after scaling), as the model sees it.
  const cfloat* gridded() const { return y_.data(); }
  // Grids a frame: y = U A^H s and the transfer function D (into the model); no scaling.
  void grid_frame(const float* traj, const cfloat* samples);

 private:
  NlinvParams p_;
  int n_, j_;
  std::size_t points_;
  std::unique_ptr<NlinvModelCpu> model_;
  std::unique_ptr<IrgnmCpu> irgnm_;
  std::unique_ptr<NufftOperatorCpu> nufft_, psf_;
  HostBuffer<cfloat> y_, x_, ref_, ones_, psf_image_;
  double scaling_ = -1;
  bool first_ = true;
};

}  // namespace radstream
