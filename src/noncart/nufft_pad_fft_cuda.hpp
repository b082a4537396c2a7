// The 2D forward NUFFT's head on the custom FFT engine: images [batch][N][N] -> apodized, zero-padded and
// forward-transformed grids [batch][G][G], in two kernels that never touch the padding's zeros:
//  1. rows: each of the N image rows is apodized and placed in its G-point row as the first FFT pass loads
//     it (the zeros are not read), transformed in shared memory, and stored: [batch][N][G];
//  2. columns: each of the G columns takes its N nonzero rows the same way and stores all G outputs.
// It replaces a memset of the whole grid, an apodize-and-pad kernel and cuFFT's two passes over the full
// grid (on an H200, F1's 256^2 x 32 coils: 12.8 + 42 + 38 us of kernels and a 67 MB memset), moving about
// 150 MB instead of about 470. Grids of 64..2048 points (powers of two: supports()); CUDA builds only.
#pragma once
#include <cstddef>

#include "core/buffer.hpp"
#include "gpu/device_memory.hpp"
#include "noncart/nufft_kernel.hpp"

namespace radstream {

class PadFftCuda {
 public:
  static bool supports(int grid);
  // matrix N, grid G (supports(G)), the axis apodization of both axes (make_axis_apodization(N, G, lut)).
  PadFftCuda(int matrix, int grid, int batch, const AxisApodization& ap, gpu::StreamRef stream);
  // d_images [batch][N][N] -> d_grids [batch][G][G] (every cell written), on the stream.
  void run(const cfloat* d_images, cfloat* d_grids);

 private:
  int N_, G_, batch_, smem_cols_ = 0;
  gpu::StreamRef stream_;
  DeviceBuffer<float> factor_;  // [N]
  DeviceBuffer<cfloat> tw_, mid_;
};

}  // namespace radstream
