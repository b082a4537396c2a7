// One stream's NLINV (BART's rtnlinv, frame by frame), the backend-neutral part: each frame's spokes are
// gridded once onto the model's oversampled grid by the backend (grid_frame: y_j = U A^H s_j, A the NUFFT on
// the G x G grid scaled as unitary for the N x N image, as BART's nufft and its factor 2 do; and the transfer
// function D from the same trajectory); every frame's data are scaled by 100 / ||y|| of the stream's first
// frame; the IRGNM starts from the previous frame's solution (the first from rho = 1, c = 0) and is
// regularized toward temporal_damping times it. With virtual_coils (fewer than the input's coils) the samples
// are first compressed by the principal components of the stream's first frame (nlinv/coil_compression.hpp),
// kept until reset(). NlinvCpu and NlinvCuda supply the model and the gridding.
#pragma once
#include <memory>

#include "iter/irgnm.hpp"
#include "nlinv/coil_compressor.hpp"
#include "nlinv/located_buffer.hpp"
#include "nlinv/nlinv_engine.hpp"
#include "nlinv/nlinv_model.hpp"

namespace radstream {

// The coils the model works on: virtual_coils when it compresses (0 < V < the input's), else the input's.
int nlinv_model_coils(int input_coils, const NlinvParams& p);
// The Gauss-Newton solver's settings of NLINV's parameters.
IrgnmParams irgnm_params(const NlinvParams& p);

class NlinvSolver : public NlinvEngine {
 public:
  NlinvFrameReport reconstruct(const float* traj, const cfloat* samples, cfloat* out) override;
  void reset() override;
  // One frame on synthetic data, then reset(): every kernel and FFT plan runs once, so that the first real
  // frame does not pay the GPU's lazy module loading or FFTW's first-run costs (a deadline frame would
  // overrun by them). Allocates (configure time only).
  void warm_up();
  // The last frame's coil sensitivities c_j, [J][N][N] on the host (J: the model's coils, virtual ones when
  // it compresses), and J.
  int coil_maps(std::vector<cfloat>& host);

  NlinvModel& model() { return *model_; }
  Irgnm& irgnm() { return *irgnm_; }
  // The solution x = (rho, chat) of the last frame and the frame's gridded, scaled data y [J][G*G].
  const cfloat* solution() const { return x_.data(); }
  const cfloat* gridded() const { return y_.data(); }
  // Grids a frame: y = U A^H s and the transfer function D (into the model); no scaling.
  virtual void grid_frame(const float* traj, const cfloat* samples) = 0;

 protected:
  // model, ops and compressor at one location.
  NlinvSolver(const NlinvParams& p, std::unique_ptr<NlinvModel> model, std::unique_ptr<VectorOps> ops,
              std::unique_ptr<CoilCompressor> compressor, int input_coils, std::size_t points);
  cfloat* y() { return y_.data(); }

  NlinvParams p_;
  std::unique_ptr<NlinvModel> model_;
  std::unique_ptr<Irgnm> irgnm_;
  std::unique_ptr<CoilCompressor> compressor_;
  LocatedBuffer y_, x_, ref_;
  double scaling_ = -1;
  int in_coils_;
  std::size_t points_;
  LocatedBuffer compressed_;  // the frame's virtual coils [V][points] when compressing
  LocatedBuffer maps_;        // [J][N][N]: coil_maps()' staging
  bool compression_ready_ = false;
  bool quiet_ = false;  // warm_up: no log lines
};

}  // namespace radstream
