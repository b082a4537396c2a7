// The normal operator of time-segmented field-corrected SENSE as Toeplitz convolutions on the 2N grid (issue
// 13's S4: the live-path scale). With G = sum_l B_l E diag(e_l) (E: the field-free SENSE operator, coils S_c
// and the NUFFT F; B_l: the segment weights b_l(t_m) on the samples; e_l = exp(-2 pi i fm t_l)):
//   G^H G x = sum_c conj(S_c) sum_l conj(e_l) sum_l' T_ll' (e_l' S_c x),   T_ll' = F^H diag(b_l b_l') F,
// and every T_ll' is a convolution with the point-spread function q_ll'(d) = sum_m b_l(t_m) b_l'(t_m)
// exp(+2 pi i k_m . d) (real weights: a real DFT kernel; T_ll' = T_l'l, so L(L+1)/2 kernels). One application
// costs, per coil, L forward and L inverse FFTs of the 2N grid and no gridding at all; the kernels cost
// L(L+1)/2 adjoints of a field-free one-channel operator onto the 2N matrix (make_kernels(), once per
// trajectory). forward() and adjoint() are G's own. Sample weights are not supported (G is unweighted). 1..8
// segments. Nothing is allocated after construction. CUDA twin: SegmentedToeplitzCuda (CUDA builds only).
#pragma once
#include <memory>
#include <vector>

#include "exact/time_segmented.hpp"
#include "fft/cufft_plan.hpp"
#include "fft/fftw_plan.hpp"
#include "linalg/linear_operator.hpp"

namespace radstream {

inline constexpr int kMaxToeplitzSegments = 8;

// The pairs l <= l' in the order (0,0) (0,1) .. (0,L-1) (1,1) .. (L-1,L-1): the index of (l, l'), either
// order.
int segment_pair(int l, int lp, int segments);
// [pairs][samples] b_l(t_m) b_l'(t_m), as complex samples (imaginary part 0).
std::vector<cfloat> segment_pair_weights(const TimeSegments& seg);

// What both twins are made from. maps [coils][N][N] stay the caller's (kept by reference; on the host for the
// CPU twin, on the device for the CUDA one); fm [N][N] in Hz; t: one time per sample of one coil (s).
struct SegmentedToeplitzSpec {
  int matrix = 0;
  int coils = 0;
  const cfloat* maps = nullptr;
  std::vector<float> fm, t;
  int segments = 4;
};

// Checks spec against g (both twins): ConfigError for the segment count, InputError for sizes; returns Mt.
std::size_t check_segmented_toeplitz(const LinearOperator& g, const SegmentedToeplitzSpec& spec);

class SegmentedToeplitzCpu final : public LinearOperator {
 public:
  // g: the time-segmented SENSE operator (image [N][N] -> samples [coils][Mt]). Throws ConfigError for a
  // segment count outside 1..8 and InputError for sizes that do not fit g.
  SegmentedToeplitzCpu(std::shared_ptr<LinearOperator> g, const SegmentedToeplitzSpec& spec, int threads = 0);
  // psf: field-free, one channel, [2N][2N] -> the Mt samples, on the frame's trajectory (an adjoint NUFFT
  // onto the 2N matrix); only its adjoint is used. Call again when the trajectory changes.
  void make_kernels(LinearOperator& psf);
  void forward(const cfloat* x, cfloat* y) override { g_->forward(x, y); }
  void adjoint(const cfloat* y, cfloat* x) override { g_->adjoint(y, x); }
  void normal(const cfloat* x, cfloat* z) override;
  // G's own forward then adjoint (the reference the Toeplitz form is tested against).
  void normal_direct(const cfloat* x, cfloat* z) { g_->normal(x, z); }

 private:
  std::shared_ptr<LinearOperator> g_;
  int N_, C_, L_, P_;
  const cfloat* maps_;
  std::vector<cfloat> e_, pair_w_;  // [L][N N], [P][Mt]
  std::vector<float> kernels_;      // [P][2N][2N], real
  FftwPlan fwd_, inv_, kfft_;       // batch L, batch L, one
  HostBuffer<cfloat> grids_, t_, k_;
  bool ready_ = false;
};

class SegmentedToeplitzCuda final : public LinearOperator {
 public:
  // spec.maps on the device. Coils are transformed in chunks (all at once up to 256 MiB of 2N grids).
  SegmentedToeplitzCuda(std::shared_ptr<LinearOperator> g, const SegmentedToeplitzSpec& spec,
                        gpu::StreamRef stream);
  gpu::StreamRef stream() const override { return stream_; }
  void make_kernels(LinearOperator& psf);
  void forward(const cfloat* d_x, cfloat* d_y) override { g_->forward(d_x, d_y); }
  void adjoint(const cfloat* d_y, cfloat* d_x) override { g_->adjoint(d_y, d_x); }
  void normal(const cfloat* d_x, cfloat* d_z) override;
  void normal_direct(const cfloat* d_x, cfloat* d_z) { g_->normal(d_x, d_z); }

 private:
  std::shared_ptr<LinearOperator> g_;
  gpu::StreamRef stream_;
  int N_, C_, L_, P_, chunk_;
  std::size_t Mt_;
  const cfloat* maps_;
  CufftPlan fft_, kfft_;
  DeviceBuffer<cfloat> e_, pair_w_, pad_, grids_, t_, work_;
  DeviceBuffer<float> kernels_;
  bool ready_ = false;
};

}  // namespace radstream
