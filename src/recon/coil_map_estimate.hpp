// Coil sensitivities estimated from the radial data themselves (seed 000's need for S without a separate
// calibration scan). By default ESPIRiT (recon/espirit.hpp: eigenvector maps of the calibration region, the
// support faded by a smooth step of the eigenvalue). method = Walsh: Walsh's adaptive method,
//  1. low-resolution coil images on an L x L matrix from the centre of k-space (|k| < L/2N cycles per pixel),
//     ramp-weighted with a Hann taper, by the adjoint NUFFT: radial sampling is dense there, so a window of a
//     few dozen spokes is already fully sampled at low resolution;
//  2. per low-resolution pixel, the dominant eigenvector of the coil correlation matrix over a 5 x 5
//     neighbourhood, sum_n I_n I_n^H (power iteration), phase referenced to the strongest coil;
//  3. a support mask: zero maps where the neighbourhood holds less than mask_threshold of the peak energy;
//  4. a refinement against the data (recon/coil_map_refine.hpp: one JSENSE alternation on a 64^2 grid),
//     which removes the local estimate's bias at the object's edges;
//  5. bilinear interpolation to N x N and normalization to unit root-sum-of-squares per pixel inside the
//     (interpolated) support.
// Pure function of the frame; the caller decides when to run it (offline once; in a stream every K frames,
// off the frame's critical path).
#pragma once
#include "core/buffer.hpp"
#include "recon/coil_map_refine.hpp"
#include "recon/espirit.hpp"
#include "stages/cg_sense/cg_sense.hpp"

namespace radstream {

struct CoilMapEstimate {
  CoilMapMethod method = CoilMapMethod::Espirit;
  SensMask mask = SensMask::Auto;  // off: no support (ESPIRiT's weight, Walsh's threshold) at all
  EspiritParams espirit;           // its grid and threads come from matrix and threads below
  int matrix = 48;  // L, the low-resolution matrix (clamped to N); ESPIRiT's eigen-problem grid
  int radius = 2;   // neighbourhood half-width in low-resolution pixels
  int power_iterations = 8;
  // Pixels whose neighbourhood energy is below this fraction of the peak (after a one-pixel dilation) get
  // zero maps, as ESPIRiT's eigenvalue threshold does: the solver then puts nothing where there is no signal.
  double mask_threshold = 0.01;
  CoilMapRefine refine;  // the data-consistent refinement (refine.matrix = 0: Walsh only)
  int threads = 0;  // CPU threads (0: all); a stream's background refresh uses few, to leave the cores to it
  // Where ESPIRiT's eigen-problems run (recon/espirit_cuda.cu on the CUDA backend, on `device`); Walsh's
  // method runs on the CPU on either.
  Backend backend = Backend::Cpu;
  int device = 0;
};

// The estimate the settings ask for (cg.maps_method, sens_mask, maps_matrix), on `backend`'s `device`.
inline CoilMapEstimate coil_map_settings(const CgSenseParams& cg, Backend backend, int device) {
  CoilMapEstimate est;
  est.method = cg.maps_method;
  est.mask = cg.sens_mask;
  est.matrix = cg.maps_matrix;
  est.backend = backend;
  est.device = device;
  return est;
}

// The samples an estimate uses (|k| < L / 2N), copied out of a frame: data [coils][1][n], traj [n][2]. A
// stream copies this band (a fraction L / N of the samples) and estimates from it on a helper thread.
struct CoilMapBand {
  HostBuffer<cfloat> data;
  HostBuffer<float> traj;
};
CoilMapBand coil_map_band(View<const cfloat> data, View<const float> traj, int matrix,
                          const CoilMapEstimate& p = {});
// The band's radius |k| (cycles per pixel of the N x N matrix) below which coil_map_band keeps a sample.
double coil_map_band_radius(int matrix, const CoilMapEstimate& p = {});

// data [coils][spokes][samples], traj [spokes][samples][2] (cycles per pixel of the N x N matrix), both on
// the host. Returns [coils][N][N]. Throws InputError for mismatched extents.
HostBuffer<cfloat> estimate_coil_maps(View<const cfloat> data, View<const float> traj, int matrix,
                                      const CoilMapEstimate& p = {});

}  // namespace radstream
