// The NUFFT alone (no density weighting, no coil combination): `kind: nufft` times one operator both ways on
// the case's radial frame (F1: the forward of R1), `kind: nufft-sweep` measures time against accuracy over
// kernel widths and oversampling, in 2D and 3D, each point against the exact NUDFT in double on a sample of
// its outputs (the curves NUFFT libraries are compared by).
#pragma once
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_case.hpp"

namespace radstream::app {

// Points of one NUFFT problem: traj [n][dims] in cycles per pixel onto `matrix` (x first, unused axes 1).
struct NufftGeometry {
  std::string name;
  int dims = 2;
  std::array<int, 3> matrix{1, 1, 1};
  std::vector<float> traj;
  std::size_t points() const { return traj.size() / std::size_t(dims); }
};

// The case's golden-angle frame (the simulator's spokes, as R1 reads them).
NufftGeometry radial_nufft_geometry(int matrix, int samples, int spokes);
// Uniform random points in [-0.5, 0.5)^dims onto N per axis (a fixed seed).
NufftGeometry random_nufft_geometry(int dims, int N, std::size_t points, unsigned seed);

// kind nufft: set_points, forward and adjoint of the case's frame with the case's gridding kernel, batched
// over its coils; times (CUDA events on the GPU), and each direction's error against the exact sums.
nlohmann::ordered_json nufft_case(const BenchCase& c, int frames, int warmup);
// kind nufft-sweep: both directions over widths 2..8 and oversampling 1.25 and 2 on the case's
// geometries (radial: the case's frame; random-2d: `points` onto random_matrix^2; random-3d: `points` onto
// volume^3); rows of (direction, geometry, dims, width, sigma, relative error, ms, points/s) and, per
// geometry and direction, the fastest setting at relative error <= 1e-3, 1e-4 and 1e-5.
nlohmann::ordered_json nufft_sweep_case(const BenchCase& c, int frames, int warmup);

}  // namespace radstream::app
