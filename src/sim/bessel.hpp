// Bessel function J1 for the analytic phantom, by the polynomial approximations of Abramowitz and Stegun
// (9.4.4 and 9.4.6; absolute error below 1e-7), several times faster than std::cyl_bessel_j.
#pragma once

namespace radstream {

double bessel_j1(double x);

// J1(2 pi q) / q, the Fourier transform of the unit disc at radial frequency q; pi at q = 0.
double jinc_disc(double q);

}  // namespace radstream
