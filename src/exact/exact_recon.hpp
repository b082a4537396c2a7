// The seeds' reconstructions on the exact model, on the host or the GPU:
//   fhd:  F^H d per coil, coils combined by root-sum-of-squares (seed 000's F^H d; no density compensation);
//   cg:   (F^H F + lambda M C^T C) x = F^H d per coil (seed 001's Table 44.1; C = first differences as CSR),
//         coils combined by RSS. Without a field F^H F goes through Q on the 2N grid (Toeplitz, seed 000);
//         with a field map or gradients through F then F^H computed on the fly (seed 001). "K iterations" is
//         K updates of x, each one application of the normal operator (ConjugateGradient's definition: Table
//         44.1's first pass, which divides by zero as printed, is its i = 1 with dir = grad).
// lambda is relative to the scale of F^H F: its diagonal is M (the number of samples) without gradients, so
// lambda M weighs ||C x||^2 against ||F x - d||^2 the same for any M (the pipeline's convention for
// cg-sense). exact_cg_reference is the double-precision twin on the host (direct F^H F, same iteration count)
// that the GPU is checked against.
#pragma once
#include <complex>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/exact_model.hpp"

namespace radstream {

enum class ExactMethod { Fhd, Cg };

struct ExactReconOptions {
  ExactMethod method = ExactMethod::Fhd;
  bool gpu = false;
  bool fast_math = false;  // GPU only: hardware sincos
  int iterations = 8;
  double lambda = 1e-2;
  bool toeplitz = true;  // without a field: F^H F through Q (false: F then F^H, as with a field)
  // Sample weights W (e.g. density compensation; empty: none): fhd writes F^H W d, cg solves
  // (F^H W F + lambda M C^T C) x = F^H W d, a weighted least-squares fit that CG reaches in fewer iterations
  // on strongly non-uniform trajectories. cg needs the Toeplitz path (no field) for them.
  std::vector<float> weights;
  // When CG's normal operator is F then F^H (a field, or toeplitz = false): the stored matrix G of
  // dense_exact.hpp, computed once, for F, F^H and the F^H d when it takes at most this many MiB (0: always
  // on the fly, every term recomputed per application).
  std::size_t matrix_limit_mb = 1024;
  // cg: an anatomical prior (seed 000's anatomically constrained reconstruction): one region label per voxel;
  // first differences between voxels of different regions are left out of C (empty: C over the whole grid).
  std::vector<int> regions;
};

struct ExactReconResult {
  std::vector<cfloat> image;  // voxels: the single coil's complex image, or the RSS of the coils (real)
  int coils = 1;
  int iterations = 0;
  double residual = 0;  // CG's final |r| / |b| (last coil)
  // Wall times (ms) with the device synchronized: F^H d, Q and its FFT, the CG iterations, all.
  double fhd_ms = 0, q_ms = 0, cg_ms = 0, total_ms = 0;
  double matrix_ms = 0;  // computing the stored matrix (when one was used)
  bool matrix = false;   // F and F^H came from the stored matrix
};

// kdata: coils blocks of model.samples() values. Throws InputError / ConfigError naming the bad value.
ExactReconResult exact_reconstruct(const ExactModel& model, const std::vector<cfloat>& kdata, int coils,
                                   const ExactReconOptions& options);

// One coil in double on the host: fhd (iterations = 0) or K CG iterations on direct F^H F + lambda M C^T C.
std::vector<std::complex<double>> exact_cg_reference(const ExactModel& model, const cfloat* kdata,
                                                     int iterations, double lambda);

}  // namespace radstream
