// The SENSE encoding operator on the CPU (seed 000's E, BART's sense linop chained with its nufft):
//   forward  y_c = sqrt(W) NUFFT(S_c x)          image [N][N] -> samples [coils][points]
//   adjoint  x   = sum_c conj(S_c) NUFFT^H(sqrt(W) y_c)
// with the unscaled exact-NUDFT pair of NufftOperatorCpu and optional sample weights W >= 0 (density
// compensation as a preconditioner; none = all 1), so that normal() is E^H W E.
//
// Toeplitz normal (toeplitz = true): E^H W E x = sum_c conj(S_c) crop(IFFT_2N(K . FFT_2N(pad(S_c x)))), where
// K is the DFT of the point-spread function T(d) = sum_j w_j exp(+2 pi i k_j . d), d in [-N, N)^2, i.e. one
// adjoint NUFFT of the weights onto a 2N matrix and one FFT, made in set_points(). Each application then
// costs a batched forward and inverse FFT of [coils][2N][2N] and no gridding at all.
//
// images > 1: that many independent problems sharing one trajectory and weights, solved as one (the z
// positions of a stack of stars after the FFT along kz): the image is [images][N][N], the maps
// [images][coils][N][N], the samples [images][coils][points]; image g is seen by its own coils only, so the
// normal operator is block diagonal with one Toeplitz kernel for all blocks, and every NUFFT and FFT is one
// batch over images x coils.
#pragma once
#include <memory>

#include "fft/fftw_plan.hpp"
#include "linalg/linear_operator.hpp"
#include "noncart/nufft_operator_cpu.hpp"
#include "noncart/sense_shape.hpp"

namespace radstream {

class SenseOperatorCpu final : public LinearOperator {
 public:
  // planner: FFTW's effort for the operator's plans (Measure is several times faster per transform; it
  // costs planning time once, here).
  SenseOperatorCpu(int matrix, int coils, std::size_t points, const NufftKernel& kernel, bool toeplitz,
                   int threads = 0, FftPlanner planner = FftPlanner::Estimate, int images = 1);

  // maps [images][coils][N][N] (kept by reference until the next call).
  void set_maps(const cfloat* maps);
  // traj [points][2] (cycles per pixel); weights [points] or nullptr (all 1; a negative or non-finite weight
  // counts as 0). Makes the PSF kernel.
  void set_points(const float* traj, const float* weights = nullptr);
  void forward(const cfloat* x, cfloat* y) override;
  void adjoint(const cfloat* y, cfloat* x) override;
  // E^H W E x: through the PSF kernel when Toeplitz, else forward then adjoint.
  void normal(const cfloat* x, cfloat* z) override;
  // Forward then adjoint, whatever the mode (the reference the Toeplitz normal is tested against).
  void normal_direct(const cfloat* x, cfloat* z) { LinearOperator::normal(x, z); }
  // sum_j w_j: the diagonal of E^H W E where sum_c |S_c|^2 = 1 (the scale a relative lambda refers to).
  double weight_sum() const { return weight_sum_; }
  bool toeplitz() const { return toeplitz_; }
  // The coil split's sums (SenseOperatorCuda's twins): coil sums in double with exact products, added across
  // partitions in double and rounded once, so that the split does not change the rounded result.
  void adjoint_sum(const cfloat* y, std::complex<double>* x);
  void normal_sum(const cfloat* x, std::complex<double>* z);
  void round_sum(const std::complex<double>* sum, cfloat* out);

 private:
  int N_, coils_, images_, channels_;  // channels: images x coils
  std::size_t points_, pixels_;
  bool toeplitz_;
  const cfloat* maps_ = nullptr;
  bool points_set_ = false;
  double weight_sum_ = 0;
  NufftOperatorCpu nufft_;
  bool weighted_ = false;
  HostBuffer<float> sqrt_w_;        // [points]
  HostBuffer<cfloat> coil_images_;  // [channels][N][N]
  HostBuffer<cfloat> samples_;      // [channels][points]
  // Toeplitz
  std::unique_ptr<NufftOperatorCpu> psf_nufft_;  // 2N matrix, one batch
  FftwPlan fwd2_, inv2_, psf_fft_;
  HostBuffer<cfloat> kernel_;         // [2N][2N], the PSF's DFT over (2N)^2
  HostBuffer<cfloat> grids2_;         // [channels][2N][2N]
  HostBuffer<cfloat> psf_w_, psf_t_;  // [points] and [2N][2N]: the weights and T
  HostBuffer<cfloat> direct_;         // [channels][points], normal_sum without Toeplitz (allocated only then)
  void check_ready() const;
  template <class T>
  void adjoint_into(const cfloat* y, T* x);
  template <class T>
  void toeplitz_into(const cfloat* x, T* z);
};

}  // namespace radstream
