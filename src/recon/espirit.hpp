// Coil sensitivities by ESPIRiT (Uecker et al., MRM 71:990, 2014; BART's `ecalib -m1`) from a radial frame:
//  1. the calibration region: the coil images of the central band (|k| < L/2 samples) by a ramp-weighted
//     adjoint NUFFT on an L x L grid, then a DFT to the central cal x cal samples of Cartesian k-space
//     (radial sampling is densest there; BART users do the same with `nufft -a` and `fft` before `ecalib`);
//  2. the calibration matrix A (every kernel x kernel patch of the region, all coils, one row each) and its
//     signal subspace V: the right singular vectors whose squared singular value is at least threshold x the
//     largest (BART's -t);
//  3. the image-space operator G(x) = (1/k^2) sum_i g_i(x) g_i(x)^H, g_i the Fourier transform of kernel V_i,
//     on a grid of `grid` x `grid` pixels (G is a trigonometric polynomial of degree k - 1: smooth);
//  4. per pixel, G's dominant eigenvector (the map) and eigenvalue (about 1 where the coils see signal, below
//     it in the background), the phase turned so that the maps' projection on the first principal component
//     of the coils is real (as BART does), then bilinear to N x N and unit root-sum-of-squares per pixel;
//  5. the support, when asked: the maps weighted by a smooth step of the eigenvalue (0 below crop - soft,
//     1 above crop + soft), never a hard mask, so the weight's edge is as smooth as the eigenvalue map.
#pragma once
#include <complex>
#include <vector>

#include "core/buffer.hpp"
#include "stage/stage.hpp"

namespace radstream {

struct EspiritParams {
  int calibration = 24;      // cal, the side of the Cartesian calibration region in samples (at most 0.7 N)
  int kernel = 6;            // k, the kernel's side
  double threshold = 0.001;  // singular vectors kept: sigma^2 >= threshold x sigma_max^2 (BART ecalib -t)
  int grid = 64;             // the eigen-problems are solved on this grid (clamped to N), then interpolated
  bool mask = true;          // weight the maps by the smooth step of the eigenvalue
  // The step's centre and half width: weight 0 below 0.5, 1 above 0.7. BART's -c 0.8 is a hard cut; on
  // undersampled radial data (25 spokes) the eigenvalue inside the body dips to 0.7, and a live image must
  // not lose a device that lies just outside the body, so the step sits lower and is soft.
  double crop = 0.6;
  double soft = 0.1;
  int threads = 0;  // CPU threads (0: all)
};

struct EspiritMaps {
  HostBuffer<cfloat> maps;        // [coils][N][N]
  std::vector<float> eigenvalue;  // [N][N], G's largest eigenvalue per pixel
  int kept = 0;                   // singular vectors kept
};

// Steps 1 and 2 (on the host: a small NUFFT and one eigen-decomposition of the calibration matrix's Gram
// matrix): the kernels that span the signal subspace, V [k^2 coils][kept] (row (c, py, px)), in double.
struct EspiritSubspace {
  std::vector<std::complex<double>> V;
  int kept = 0, coils = 0, kernel = 0;
  int matrix = 0;  // N, the image grid
  int grid = 0;    // M, the eigen-problems' grid
};

// data [coils][spokes][samples] or [coils][1][n], traj [n][2] in cycles per pixel of the N x N matrix.
// Throws InputError for mismatched extents, an odd matrix or a calibration region with no signal.
EspiritSubspace espirit_subspace(View<const cfloat> data, View<const float> traj, int matrix,
                                 const EspiritParams& p = {});

// Steps 3 to 5 from the subspace: on the CPU, or on the current CUDA device (its twin, recon/espirit_cuda.cu;
// the same maps to float rounding; throws CudaError in a build without CUDA or on a machine without a GPU).
EspiritMaps espirit_maps_cpu(const EspiritSubspace& s, const EspiritParams& p = {});
EspiritMaps espirit_maps_cuda(const EspiritSubspace& s, const EspiritParams& p = {});

// The whole estimate on the given backend.
EspiritMaps espirit_maps(View<const cfloat> data, View<const float> traj, int matrix,
                         const EspiritParams& p = {}, Backend backend = Backend::Cpu);

// The smooth step of the support weight (0 at or below crop - soft, 1 at or above crop + soft).
float espirit_weight(float eigenvalue, const EspiritParams& p);

}  // namespace radstream
