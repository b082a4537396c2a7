// NLINV's model work on the custom FFT engine (CUDA builds only), for grids G of 64..2048 points
// (supports()): the Gauss-Newton normal operator DG^H D DG, the linearization's coil images and the Newton
// step's gradient (nlinv_model.hpp). With M the central n x n mask, c_j the coil images, W the Sobolev weight
// and s = 1/G, the normal operator the cuFFT path runs in nine steps over [J][G][G] arrays,
//   dc_j = IFFT2(s W v_j);  z_j = s M (v_rho c_j + rho dc_j);  u_j = IFFT2(D FFT2(z_j));
//   out_rho = s M sum_j conj(c_j) u_j;  out_j = s W FFT2(s M conj(rho) u_j),
// runs here in five kernels over one [J][n][G] array (the mask's rows, every column), each a pass of 1D
// transforms that reads only rows the mask keeps and stores only what the next step reads:
//  1. columns: each of the G columns of coil j is weighted as it loads, transformed back along y, and its n
//     mask rows stored;
//  2. rows: each of those rows is transformed back along x, combined into z_j at its n mask cells as it is
//     stored (in shared memory), transformed forward along x and stored whole, in place;
//  3. columns: each column (n nonzero rows) is transformed forward along y, multiplied by D's column,
//     transformed back and its n mask rows stored in place (the point spread function's convolution);
//  4. rows: each mask row of every coil is transformed back along x; a block holds the row of several coils
//     at once and sums conj(c_j) u_j over the coils in a fixed order (no atomics) into out_rho's row; the
//     row of s conj(rho) u_j is transformed forward and stored in place;
//  5. columns: each column is transformed forward along y and stored weighted into out_j; out_rho outside
//     the mask's rows is zeroed there.
// On N1's 8 x 512^2 this moves about 115 MB per application against about 420 MB for cuFFT's eight passes
// and the five pointwise kernels between them. The linearization is step 1 and a rows pass that stores the
// coil images' mask cells; the gradient r = y - D FFT2(s M rho c_j), b = DG^H r is a rows pass (forward
// along x of the mask's rows), a columns pass (forward along y, r formed and stored as it is, back along y)
// and steps 4 and 5.
#pragma once
#include "core/buffer.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/handles.hpp"

namespace radstream {

class NlinvFusedCuda {
 public:
  static bool supports(int grid);
  NlinvFusedCuda(int matrix, int grid, int coils, gpu::StreamRef stream);
  // The point of linearization and the frame's arrays, all on the device: the weight W [G*G], the transfer
  // function D [G*G], rho [G*G] and the coil images c [J][G*G].
  struct Point {
    const float* weight;
    const cfloat* pattern;
    const cfloat* rho;
    const cfloat* coils;
  };
  // out [(1 + J) G*G] = DG^H D DG v (v likewise; they may not alias), enqueued on the stream.
  void normal(const Point& at, const cfloat* v, cfloat* out);
  // coils [J][G*G] = IFFT2(s W x_j) (x: the unknowns) at the mask's cells; the other cells are not written.
  void linearize(const float* weight, const cfloat* x, cfloat* coils);
  // r [J][G*G] = y - s D FFT2(M rho c_j) (the data's residual) and b [(1 + J) G*G] = DG^H r.
  void gradient(const Point& at, const cfloat* y, cfloat* r, cfloat* b);

 private:
  int n_, g_, j_;
  gpu::StreamRef stream_;
  DeviceBuffer<cfloat> tw_, mid_;  // twiddles of G points; [J][n][G]
};

}  // namespace radstream
