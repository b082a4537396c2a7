// A 3D analytic phantom for seed 000's case: the modified 3D Shepp-Logan ellipsoids on the field of view
// [-1, 1]^3 (rotations about z only), with its exact Fourier transform (no inverse crime): an ellipsoid of
// intensity A, semi-axes a, b, c, centre x0 and rotation phi has
//   F(kappa) = A a b c exp(-2 pi i kappa . x0) B(|diag(a, b, c) R(-phi) kappa|),
//   B(q) = (sin(2 pi q) - 2 pi q cos(2 pi q)) / (2 pi^2 q^3)   (the unit ball's transform, B(0) = 4 pi / 3),
// kappa in cycles per unit of the field of view. And the 3D radial trajectory of that case: full spokes
// through k = 0 along directions spread over a hemisphere (a golden-angle spiral), samples symmetric about 0.
#pragma once
#include <array>
#include <complex>
#include <vector>

namespace radstream {

struct Ellipsoid {
  double intensity, a, b, c, x0, y0, z0, phi_deg;
};

std::vector<Ellipsoid> shepp_logan_3d();

std::complex<double> ellipsoids_fourier(const std::vector<Ellipsoid>& e, double kx, double ky, double kz);
double ellipsoids_value(const std::vector<Ellipsoid>& e, double x, double y, double z);

// n^3 voxels [z][y][x] (x fastest), voxel (i, j, l) centred at ((i - n/2) 2/n, ...), each the mean of sub^3
// points inside it.
std::vector<float> rasterize_3d(const std::vector<Ellipsoid>& e, int n, int sub = 2);

// The anatomy a prior may know: per voxel of the n^3 grid (as rasterize_3d, sampled at sub^3 points), the set
// of ellipsoids that contain its points as a bit mask; a voxel whose points disagree (a boundary runs through
// it, its value a partial volume) gets a label of its own (negative). Voxels with equal labels share a
// region.
std::vector<int> region_labels_3d(const std::vector<Ellipsoid>& e, int n, int sub = 2);

// spokes x samples points (cycles per pixel, x y z), spoke-major; sample i of a spoke at radius
// (i + 1/2 - samples/2) / samples, so the set is symmetric about k = 0 and never hits it.
std::vector<std::array<float, 3>> radial_3d(int spokes, int samples);

// Seed 000's experiment re-created: the phantom's exact k-space on radial_3d(spokes, samples) for an n^3
// image (k in cycles per pixel; values scaled so that the direct sum over the voxels of the rasterized
// phantom approximates them: (n/2)^3 times the continuous transform), complex white Gaussian noise of RMS
// noise_fraction times the data's RMS (0: none), and the truth rasterized at n^3.
struct Phantom3dCase {
  int n = 0;
  std::vector<std::array<float, 3>> k;
  std::vector<std::complex<float>> data;
  std::vector<float> truth;
};
Phantom3dCase phantom_3d_case(int n, int spokes, int samples, double noise_fraction, unsigned seed = 1);

// Seed 000's scores against the truth: percent error = 100 RMS(image - truth) / RMS(truth), PSNR = 20 log10(
// max |truth| / RMS(image - truth)). fit_scale: the image is first multiplied by the complex scale that fits
// it best to the truth (the seed does so for gridding).
struct ImageScore {
  double percent_error = 0, psnr_db = 0;
  std::complex<double> scale = 1;
};
ImageScore score_image(const std::vector<std::complex<float>>& image, const std::vector<float>& truth,
                       bool fit_scale);

}  // namespace radstream
