// Refinement of estimated coil maps against the data (JSENSE, Ying and Sheng 2007, one alternation): with the
// current maps, a CG-SENSE image x of the k-space band at a low matrix M; then, for every coil, the smooth
// map s_c = B a_c (B: bilinear from a coarse F x F grid to M x M) that best explains that coil's band data,
//   min_a || NUFFT(x . B a) - y_c ||^2 + lambda ||a||^2   (CG on the chain B then SENSE-with-map-x).
// The local (Walsh) estimate is biased where the object has edges (a blurred S_c rho is not S_c times a
// blurred rho); the fit is data-consistent and removes that bias (measured: CG-SENSE error 1.48x -> ~1.0x
// that of the true maps, docs/benchmarks.md).
#pragma once
#include <vector>

#include "core/buffer.hpp"
#include "linalg/linear_operator.hpp"

namespace radstream {

// Bilinear interpolation from an S x S grid to a T x T grid over the same field of view (pixel i of T sits at
// (i - T/2) S / T + S/2 of S, clamped to the grid), as a linear operator [S][S] -> [T][T] (host).
class BilinearResample final : public LinearOperator {
 public:
  BilinearResample(int from, int to);
  void forward(const cfloat* a, cfloat* v) override;
  void adjoint(const cfloat* v, cfloat* a) override;

 private:
  int S_, T_;
  struct Tap {
    int src[4];
    float w[4];
  };
  std::vector<Tap> taps_;  // per target pixel
};

struct CoilMapRefine {
  int matrix = 64;    // M (clamped to N); 0: no refinement
  int fit_grid = 24;  // F, the maps' degrees of freedom per axis
  int image_iterations = 20;
  int fit_iterations = 30;
  int threads = 0;
};

// data [coils][n], traj [n][2] (cycles per pixel of N); maps_M [coils][M][M] (unit RSS, zero outside the
// support). Returns the refined maps on the M grid (not normalized).
HostBuffer<cfloat> refine_coil_maps(View<const cfloat> data, View<const float> traj, int N, int M,
                                    const HostBuffer<cfloat>& maps_M, const CoilMapRefine& p);

}  // namespace radstream
