// The modified Shepp-Logan phantom (Toft) as a sum of ellipses on the field of view [-1, 1]^2, image y
// pointing down (row 0 at the top). Its Fourier transform is exact (no inverse crime): for an ellipse of
// intensity A, semi-axes a, b, centre c and rotation phi, F(kappa) = A a b exp(-2 pi i kappa.c) J1(2 pi q) /
// q with q = |diag(a, b) R(-phi) kappa|, kappa in cycles per unit of the field of view.
#pragma once
#include <complex>
#include <vector>

namespace radstream {

struct Ellipse {
  double intensity, a, b, x0, y0, phi_deg;
};

std::vector<Ellipse> modified_shepp_logan();

// A small bright ellipse (a catheter tip) at position (x, y) of the field of view.
Ellipse catheter_tip(double x, double y);

// Sum of the ellipses' transforms at kappa (cycles per unit; the FOV spans 2 units).
std::complex<double> ellipses_fourier(const std::vector<Ellipse>& e, double kx, double ky);

// The phantom's value at point (x, y) of the field of view.
double ellipses_value(const std::vector<Ellipse>& e, double x, double y);

// Rasterizes onto an n x n image (x fastest) with sub x sub supersampling per pixel; pixel (i, j) centred at
// ((i - n/2) 2/n, (j - n/2) 2/n), matching the reconstruction's pixel grid.
std::vector<float> rasterize(const std::vector<Ellipse>& e, int n, int sub = 4);

}  // namespace radstream
