// The kernel of a Toeplitz embedding on the 2N grid, from a point-spread function T(d) = sum_j w_j
// exp(+2 pi i k_j . d) sampled at d = m - N, m in [0, 2N)^2 (what an adjoint NUFFT of the weights onto a 2N
// matrix writes). Circular layout K[j] = T(j) for j < N and T(j - 2N) for j >= N on both axes; the row and
// the column of d = -N never enter a linear convolution of N x N images (|p - q| < N) and are set to 0, so
// that K is Hermitian for real weights and its DFT real. Scaled by 1 / (2N)^2 for the unnormalized inverse
// FFT that follows, then transformed: crop(IFFT(DFT(K) . FFT(pad(x)))) is then the convolution with T.
#pragma once
#include "core/buffer.hpp"
#include "fft/fftw_plan.hpp"
#include "gpu/handles.hpp"

namespace radstream {

class CufftPlan;

// t: [2N][2N]; kernel: [2N][2N], its DFT (complex; its imaginary part is rounding noise for real weights);
// fft: a forward plan of one [2N][2N] transform.
void toeplitz_kernel_cpu(const cfloat* t, int N, cfloat* kernel, const FftwPlan& fft);

// The GPU twin (CUDA builds only): d_work [2N][2N] is overwritten; d_kernel_re [2N][2N] gets the real part of
// the DFT. fft: a one-transform [2N][2N] plan on stream.
void toeplitz_kernel_cuda(const cfloat* d_t, int N, cfloat* d_work, const CufftPlan& fft, float* d_kernel_re,
                          gpu::StreamRef stream);

}  // namespace radstream
