// The SENSE encoding operator on the GPU (2D), the twin of SenseOperatorCpu (same formulas, layouts and
// Toeplitz normal): forward y_c = sqrt(W) NUFFT(S_c x), adjoint x = sum_c conj(S_c) NUFFT^H(sqrt(W) y_c),
// normal E^H W E x, through the PSF kernel when toeplitz: on the custom FFT engine (ToeplitzFftCuda: three
// kernels that skip the padding) for power-of-two matrices of 32..1024, else a batched cuFFT pair on
// [coils][2N][2N].
// Everything is enqueued on the operator's stream; nothing is allocated or synchronized after construction
// (except weight_sum() of a weighted frame, which reads one device value). images > 1: that many problems
// sharing the trajectory, solved as one (sense_operator_cpu.hpp). CUDA builds only.
#pragma once
#include <complex>
#include <memory>

#include "fft/cufft_plan.hpp"
#include "linalg/linear_operator.hpp"
#include "noncart/nufft_operator_cuda.hpp"
#include "noncart/sense_shape.hpp"
#include "noncart/toeplitz_fft_cuda.hpp"

namespace radstream {

class SenseOperatorCuda final : public LinearOperator {
 public:
  SenseOperatorCuda(int matrix, int coils, std::size_t points, const NufftKernel& kernel, bool toeplitz,
                    gpu::StreamRef stream, int images = 1);
  ~SenseOperatorCuda() override;

  gpu::StreamRef stream() const override { return stream_; }
  // d_maps [images][coils][N][N] on the device (kept by reference).
  void set_maps(const cfloat* d_maps);
  // d_traj [points][2] and d_weights [points] or nullptr, on the device (the trajectory is kept by
  // reference).
  void set_points(const float* d_traj, const float* d_weights = nullptr);
  void forward(const cfloat* d_x, cfloat* d_y) override;
  void adjoint(const cfloat* d_y, cfloat* d_x) override;
  void normal(const cfloat* d_x, cfloat* d_z) override;
  void normal_direct(const cfloat* d_x, cfloat* d_z) { LinearOperator::normal(d_x, d_z); }
  double weight_sum();
  bool toeplitz() const { return toeplitz_; }
  // The coil split's sums: the adjoint and the Toeplitz normal with their coil sums formed in double (exact
  // products), to be added across partitions in double and rounded once (round_sum), so that a frame split
  // over any number of GPUs gives the bits of the unsplit one.
  void adjoint_sum(const cfloat* d_y, std::complex<double>* d_x);
  void normal_sum(const cfloat* d_x, std::complex<double>* d_z);
  void round_sum(const std::complex<double>* d_sum, cfloat* d_out);
  // The Toeplitz normal through cuFFT even where the custom engine takes the size (the tests' reference;
  // allocates the cuFFT path's grids: before the frames).
  void set_cufft_toeplitz(bool on);
  bool custom_toeplitz() const { return !cufft_toeplitz_; }
  // The NUFFTs' deterministic spread (NufftPlanCuda::set_deterministic). Before the frames.
  void set_deterministic(bool on);

 private:
  int N_, coils_, images_, channels_;  // channels: images x coils
  std::size_t points_, pixels_;
  bool toeplitz_, cufft_toeplitz_ = true;
  gpu::StreamRef stream_;
  const cfloat* maps_ = nullptr;
  bool points_set_ = false, weighted_ = false;
  NufftOperatorCuda nufft_;
  DeviceBuffer<float> sqrt_w_;
  DeviceBuffer<double> weight_sum_;
  DeviceBuffer<cfloat> coil_images_, samples_;
  std::unique_ptr<NufftOperatorCuda> psf_nufft_;
  std::unique_ptr<ToeplitzFftCuda> custom_;  // the Toeplitz FFT work where the custom engine takes 2N
  CufftPlan fft2_, psf_fft_;
  DeviceBuffer<cfloat> kernel_, grids2_, psf_w_, psf_t_;
  // [channels][2N][2N], zero outside the top-left N x N (written per application): the cuFFT path only
  DeviceBuffer<cfloat> padded_;
  DeviceBuffer<float> kernel_re_;  // the PSF kernel, real
  DeviceBuffer<cfloat> direct_;    // [channels][points], normal_sum without Toeplitz (allocated only then)
  void check_ready() const;
  template <class T2>
  void adjoint_into(const cfloat* d_y, T2* d_x);
  template <class T2>
  void toeplitz_into(const cfloat* d_x, T2* d_z);
};

}  // namespace radstream
