// The SENSE Toeplitz normal operator's FFT work on the custom FFT engine (2D, CUDA builds only):
//   z = sum_c conj(S_c) crop_N( IFFT_2N( K . FFT_2N( pad_2N(S_c x) ) ) )
// with K the real PSF kernel on the 2N grid (toeplitz_kernel.hpp: scaled for the unnormalized inverse),
// in three kernels that never read or transform the padding's zeros and never store what the crop drops:
//  1. rows: each of the N image rows of coil c is multiplied by S_c as the first FFT pass loads it (the
//     zeros of the padding are not read), transformed over 2N points and stored: [coils][N][2N];
//  2. columns: each of the 2N columns takes its N nonzero rows, is transformed, multiplied by its column of
//     K, transformed back in the same block (shared memory), and its first N outputs are stored in place;
//  3. rows back: each image row of every coil is transformed back, cropped to N and multiplied by conj(S_c)
//     as it is stored; a block sums its row over the coils in a fixed order (no atomics): float for the
//     frame path or double with exact products for the coil split's sums (normal_sum).
// It replaces a pad kernel, cuFFT's four passes over the whole [coils][2N][2N] grids, a kernel multiply and
// a crop-and-combine (on R8's 32 x 512^2, about 600 MB moved per application) with about 170 MB.
// Grids 2N of 64..2048 points (supports()). images > 1: that many images, each seen by its own coils (maps
// [images][coils][N][N], x and z [images][N][N]), in the same three launches.
#pragma once
#include <complex>

#include "core/buffer.hpp"
#include "gpu/device_memory.hpp"

namespace radstream {

class ToeplitzFftCuda {
 public:
  // Whether the custom engine takes the 2N grid of an N x N image.
  static bool supports(int matrix);
  ToeplitzFftCuda(int matrix, int coils, gpu::StreamRef stream, int images = 1);
  // d_maps [images][coils][N][N], d_x [images][N][N], d_kernel_re [2N][2N] -> d_z [images][N][N] (written,
  // not added to), on the stream.
  void apply(const cfloat* d_maps, const cfloat* d_x, const float* d_kernel_re, cfloat* d_z);
  void apply(const cfloat* d_maps, const cfloat* d_x, const float* d_kernel_re, std::complex<double>* d_z);

 private:
  int N_, coils_, images_;
  gpu::StreamRef stream_;
  DeviceBuffer<cfloat> tw_, mid_;  // twiddles of 2N points; [images][coils][N][2N]
  template <class T2>
  void run(const cfloat* d_maps, const cfloat* d_x, const float* d_kernel_re, T2* d_z);
};

}  // namespace radstream
