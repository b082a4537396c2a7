// The seeds' exact signal model (seed 000 eq. for F^H d and Q, seed 001 eq. 44.1-44.2 and Fig. 44.3),
// computed by direct sums over every (sample, voxel) pair instead of gridding, so that physics can enter it:
//
//   forward  d_m = sum_v x_v exp(-2 pi i (k_m . r_v + fm_v t_m)) prod_a sinc(k_{m,a} + t_m g_{v,a})
//   adjoint  x_v = sum_m d_m exp(+2 pi i (k_m . r_v + fm_v t_m)) prod_a sinc(k_{m,a} + t_m g_{v,a})
//   Q(s)     = sum_m w_m exp(+2 pi i k_m . s)   on the displacements s of the 2N grid (F^H W F = Q convolved)
//
// Units: k in cycles per pixel (IMPATIENT's cycles per field of view divided by the matrix; BART's +-N/2
// units divided by N), voxel positions r in pixels, t in seconds, fm in Hz, g (the susceptibility gradient of
// seed 001) in Hz across one voxel, sinc(u) = sin(pi u) / (pi u) (a voxel of width one pixel integrated
// exactly). Voxels lie on a regular grid of three axes, slowest first (a 2D image is one slice: n = {1, Ny,
// Nx}); axis a of the trajectory pairs with axis a of the grid. Phases are reduced to [-0.5, 0.5) cycles
// before the trig.
#pragma once
#include <array>
#include <string>
#include <vector>

#include "core/buffer.hpp"

namespace radstream {

struct ExactGrid {
  std::array<int, 3> n{1, 1, 1};          // voxels along each axis, slowest first
  std::array<double, 3> origin{0, 0, 0};  // position (pixels) of voxel 0 along each axis
  std::size_t voxels() const { return std::size_t(n[0]) * n[1] * n[2]; }
  // The image grid of an N^dims matrix centred as the FFT's (voxel N/2 at r = 0).
  static ExactGrid image(int matrix, int dims);
  // The 2N grid of Q's displacements for this grid: s = -n..n-1 along every axis with n > 1.
  ExactGrid q_grid() const;
};

struct ExactModel {
  ExactGrid grid;
  std::array<std::vector<float>, 3> k;  // per sample, per axis (cycles per pixel); an empty axis reads as 0
  std::vector<float> t;                 // per sample (s); needed with a field map or gradients
  std::vector<float> fm;                // per voxel (Hz); empty: no off-resonance
  std::array<std::vector<float>, 3> g;  // per voxel, per axis (Hz across a voxel); all empty: no sinc terms

  std::size_t samples() const;
  std::size_t voxels() const { return grid.voxels(); }
  bool has_field() const { return !fm.empty() || has_gradients(); }
  bool has_gradients() const { return !g[0].empty() || !g[1].empty() || !g[2].empty(); }
  // Every array has its length, every value is finite, |k| <= 0.5 cycles per pixel is not required (the
  // sums are exact for any k) but a time vector is there when the field needs it. Throws InputError naming
  // the bad array and value.
  void validate() const;
  // The same model with every k axis filled (zeros for the empty ones), fm filled when the field is on and
  // every g axis when any is given (without gradients there are no sinc terms: a delta voxel basis, seed
  // 000's model), so the kernels read plain arrays.
  ExactModel filled() const;
};

}  // namespace radstream
